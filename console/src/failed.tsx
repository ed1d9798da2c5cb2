import { useState } from 'preact/hooks';
import { api } from './api.js';
import { time } from './format.js';
import { href } from './router.js';
import { CursorPager, Field, Fields, Heading, LoadError, StatusBadge, useLoad } from './ui.js';

const PAGE = 20;

/**
 * The workspace's failed deliveries across all webhooks, newest first (GET /deliveries?status=failed), searched
 * by the last answer's status code or class (DESIGN 10).
 */
export function FailedView() {
  // cursors[i] opens page i; the first page has none.
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined]);
  const [statusCode, setStatusCode] = useState('');
  const [typed, setTyped] = useState('');
  const cursor = cursors[cursors.length - 1];
  const page = useLoad(
    () => api.workspaceDeliveries({ status: 'failed', limit: PAGE, cursor, ...(statusCode && { statusCode }) }),
    [cursor, statusCode],
  );
  const search = (event: Event) => {
    event.preventDefault();
    setStatusCode(typed.trim());
    setCursors([undefined]);
  };
  const webhooks = useLoad(api.webhooks, []);
  const operational = useLoad(api.operationalWebhooks, []);
  const webhookName = (id: string) => {
    if (!webhooks.data || !operational.data) return id;
    const webhook = webhooks.data.find((w) => w.id === id);
    const receiver = operational.data.find((w) => w.id === id);
    if (receiver) return `${receiver.url} (operational)`;
    return webhook ? webhook.name || webhook.url : `${id} (removed)`;
  };

  return (
    <main>
      <Heading>Failed deliveries</Heading>
      <p>Every webhook's failed deliveries, newest first, including those of removed webhooks.</p>
      <form role="search" aria-label="Search failed deliveries" onSubmit={search}>
        <label for="status-code">Status code (500, or a class such as 5xx; empty for all)</label>
        <input
          id="status-code"
          name="statusCode"
          value={typed}
          onInput={(e) => setTyped((e.target as HTMLInputElement).value)}
        />
        <button type="submit">Search</button>
      </form>
      <LoadError error={page.error} />
      {page.data?.data.length === 0 && <p>No failed deliveries.</p>}
      <ul class="cards compact" aria-label="Failed deliveries">
        {page.data?.data.map((d) => (
          <li key={d.id} class="card">
            <a href={href.workspaceDelivery(d.id)}>
              <StatusBadge status={d.status} /> {time(d.createdAt)}
            </a>
            <Fields>
              <Field label="Webhook">{webhookName(d.webhookId)}</Field>
              <Field label="Attempts">{d.attemptCount}</Field>
              <Field label="Last status code">{d.lastStatusCode ?? 'none'}</Field>
              {d.lastError && <Field label="Last error">{d.lastError}</Field>}
            </Fields>
          </li>
        ))}
      </ul>
      <CursorPager label="Failed delivery pages" cursors={cursors} onChange={setCursors} next={page.data?.nextCursor} />
    </main>
  );
}
