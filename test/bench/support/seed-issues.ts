import type pg from 'pg';

/**
 * `count` issues written straight into the work plugin's table (numbered 1..count, statuses and
 * priorities cycling, two-line descriptions), with the company's counter moved past them so the
 * API numbers what comes next. Benches that need a large company start from it.
 */
export async function seedIssues(sql: pg.Pool, company: { id: string; issuePrefix: string }, count: number): Promise<void> {
  await sql.query(
    `insert into plugin_work.issues (company_id, issue_number, identifier, title, description, status, priority)
     select $1::uuid, i, $2 || '-' || i, 'Seeded issue ' || i, 'Body of issue ' || i || E'\\nwith a second line',
            (array['backlog', 'todo', 'in_progress', 'done'])[1 + i % 4], (array['low', 'medium', 'high'])[1 + i % 3]
       from generate_series(1, $3::int) as i`, [company.id, company.issuePrefix, count]);
  await sql.query('update companies set issue_counter = $2 where id = $1', [company.id, count]);
}
