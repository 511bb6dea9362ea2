import { useState, type ReactNode } from 'react';
import { api } from '../api.ts';
import { ErrorNote, Field, Form, Loading, Paged, Status, useLoad, when } from '../ui.tsx';

interface WorkProduct {
  id: string; type: string; title: string; status: string; reviewState: string; url: string | null; externalId: string | null;
  isPrimary: boolean; contentPath: string | null; createdAt: string; updatedAt: string;
}

const TYPES = ['preview_url', 'runtime_service', 'pull_request', 'branch', 'commit', 'artifact', 'document'] as const;
const STATUSES = ['active', 'ready_for_review', 'approved', 'changes_requested', 'merged', 'closed', 'failed', 'archived', 'draft'] as const;
const REVIEW_STATES = ['none', 'needs_board_review', 'approved', 'changes_requested'] as const;

/** Reads the work product form; an emptied URL or external id is null on an edit, left out on a create. */
function productBody(fields: FormData, editing: boolean): Record<string, unknown> {
  const optional = (name: string) => {
    const value = String(fields.get(name) ?? '').trim();
    return value ? value : editing ? null : undefined;
  };
  return {
    type: fields.get('type'), title: String(fields.get('title') ?? '').trim(), status: fields.get('status'), reviewState: fields.get('reviewState'),
    url: optional('url'), externalId: optional('externalId'), isPrimary: fields.get('isPrimary') === 'on',
  };
}

function choice(label: string, name: string, options: readonly string[], value: string) {
  return <Field label={label} name={name}><select name={name} defaultValue={value}>{options.map((o) => <option key={o} value={o}>{o.replace(/_/g, ' ')}</option>)}</select></Field>;
}

function ProductFields({ product }: { product?: WorkProduct }) {
  return (
    <>
      {choice('Type', 'type', TYPES, product?.type ?? 'pull_request')}
      <Field label="Title" name="title" required defaultValue={product?.title} />
      {choice('Status', 'status', STATUSES, product?.status ?? 'active')}
      {choice('Review state', 'reviewState', REVIEW_STATES, product?.reviewState ?? 'none')}
      <Field label="URL" name="url" placeholder="https://…" defaultValue={product?.url ?? undefined} />
      <Field label="External id" name="externalId" defaultValue={product?.externalId ?? undefined} />
      <label className="check"><input type="checkbox" name="isPrimary" defaultChecked={product?.isPrimary} /> Primary work product of the issue</label>
    </>
  );
}

/**
 * A disclosure whose content is built only while it is open: the issue page already has a
 * status and other fields of its own, and a work product's closed forms should not add more.
 */
function Disclosure({ summary, children }: { summary: string; children: ReactNode }) {
  const [open, setOpen] = useState(false);
  return <details onToggle={(event) => setOpen(event.currentTarget.open)}><summary>{summary}</summary>{open ? children : null}</details>;
}

/** What work on an issue produced (previews, pull requests, branches, files): listed, recorded, edited. */
export function WorkProducts({ issueId }: { issueId: string }) {
  const products = useLoad(() => api.get<WorkProduct[]>(`/api/issues/${issueId}/work-products`), [issueId]);
  return (
    <div className="card">
      <h2>Work products</h2>
      {products.loading && !products.data ? <Loading what="work products" /> : null}
      <ErrorNote error={products.error} />
      {products.data ? <Paged label="Work products" items={products.data} empty="No work products yet. Agents record theirs (a pull request, a document); record one by hand below." render={(product) => (
        <li key={product.id} className="row-item stack">
          <div className="row">
            {product.url ? <a href={product.url} rel="noreferrer noopener" target="_blank">{product.title}</a> : <strong>{product.title}</strong>}
            <span className="muted">{product.type.replace(/_/g, ' ')}</span> <Status value={product.status} />
            <span className="muted">review: {product.reviewState.replace(/_/g, ' ')}{product.isPrimary ? ' · primary' : ''} · updated {when(product.updatedAt)}</span>
            {product.contentPath ? <a href={product.contentPath}>file</a> : null}
          </div>
          <Disclosure summary={`Edit ${product.title}`}>
            <Form key={product.updatedAt} label={`Edit work product ${product.title}`} submit="Save work product" onSubmit={async (fields) => {
              await api.patch(`/api/work-products/${product.id}`, productBody(fields, true));
              await products.reload();
            }}><ProductFields product={product} /></Form>
          </Disclosure>
        </li>)} /> : null}
      <Disclosure summary="New work product">
        <Form label="New work product" submit="Record work product" onSubmit={async (fields) => {
          await api.post(`/api/issues/${issueId}/work-products`, productBody(fields, false));
          await products.reload();
        }}><ProductFields /></Form>
      </Disclosure>
    </div>
  );
}
