import { respond, respondEvents } from '@keel/sdk/plugin';
import { definePlugin } from './plugin.gen.ts';

interface NoteRow { id: string; text: string; created_at: string }

const note = (row: NoteRow) => ({ id: Number(row.id), text: row.text, createdAt: row.created_at });

/** One CSV field: quoted, with quotes doubled, so commas and line breaks in a note stay inside it. */
const csvField = (value: string | number) => `"${String(value).replaceAll('"', '""')}"`;

export default definePlugin({
  routes: {
    add: async (req, ctx) => {
      const { text } = req.body as { text: string };
      const { rows } = await ctx.db.query<NoteRow>('insert into notes (company_id, text) values ($1, $2) returning id, text, created_at', [req.companyId, text]);
      const added = note(rows[0]!);
      // Reaches the live streams of this company only (the host attaches the company), on every Keel process.
      await ctx.streams.publish('notes', added);
      return added;
    },
    export: async (req, ctx) => {
      const { rows } = await ctx.db.query<NoteRow>('select id, text, created_at from notes where company_id = $1 order by id', [req.companyId]);
      if ((req.query as { format?: string }).format === 'csv') {
        const lines = ['id,text,createdAt', ...rows.map((row) => [row.id, row.text, row.created_at].map(csvField).join(','))];
        return respond(200, `${lines.join('\r\n')}\r\n`, { 'content-type': 'text/csv', 'content-disposition': 'attachment; filename="notes.csv"' });
      }
      // A plain string on a route that declares text/markdown first is sent as Markdown.
      return ['# Notes', '', ...rows.map((row) => `- ${row.text.replace(/\s+/g, ' ')}`), ''].join('\n');
    },
    live: async (req, ctx) => {
      // A client that reconnects sends the id of the last note it saw: it gets what it missed first.
      const header = req.headers['last-event-id'];
      const after = header === undefined ? -1 : Number(header);
      const { rows } = Number.isSafeInteger(after) && after >= 0
        ? await ctx.db.query<NoteRow>('select id, text, created_at from notes where company_id = $1 and id > $2 order by id limit 100', [req.companyId, after])
        : { rows: [] as NoteRow[] };
      return respondEvents(rows.map((row) => ({ event: 'note', id: row.id, data: note(row) })), { channel: 'notes' });
    },
  },
});
