import { useState } from 'preact/hooks';
import { api, type AuditEvent } from './api.js';
import { time } from './format.js';
import { href } from './router.js';
import { CursorPager, Field, Fields, Heading, LoadError, useLoad } from './ui.js';

const PAGE = 20;

const ACTIONS: Record<string, string> = {
  'webhook.created': 'Webhook registered',
  'webhook.removed': 'Webhook removed',
  'webhook.disabled': 'Webhook paused',
  'webhook.enabled': 'Webhook resumed',
  'webhook.secret_rotated': 'Signing secret rotated',
  'webhook.settings_changed': 'Settings changed',
  'delivery.retried': 'Delivery sent again',
  'recovery.started': 'Recovery started',
  'portal_link.created': 'Portal link made',
  'portal_link.revoked': 'Portal link revoked',
};

/** Where an event's target is shown, when the console has a page for it. */
function Target({ event }: { event: AuditEvent }) {
  const { type, id } = event.target;
  if (type === 'webhook' && event.action !== 'webhook.removed') return <a href={href.webhook(id)}>{id}</a>;
  if (type === 'delivery') return <a href={href.workspaceDelivery(id)}>{id}</a>;
  return <>{id}</>;
}

/** The workspace's audit log, newest first (GET /audit-events): who changed what, and when. */
export function ActivityView() {
  const [action, setAction] = useState('');
  // cursors[i] opens page i; the first page has none.
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined]);
  const cursor = cursors[cursors.length - 1];
  const page = useLoad(() => api.auditEvents({ action: action || undefined, limit: PAGE, cursor }), [action, cursor]);

  return (
    <main>
      <Heading>Activity</Heading>
      <p>
        Every change made to this workspace through the API, newest first: when, by which API key (or portal link), and
        what changed.
      </p>
      <label>
        Action{' '}
        <select
          value={action}
          onChange={(e) => {
            setAction((e.target as HTMLSelectElement).value);
            setCursors([undefined]);
          }}
        >
          <option value="">All</option>
          {Object.entries(ACTIONS).map(([value, label]) => (
            <option key={value} value={value}>
              {label}
            </option>
          ))}
        </select>
      </label>
      <LoadError error={page.error} />
      {page.data?.data.length === 0 && <p>No changes recorded.</p>}
      <ul class="cards compact" aria-label="Changes">
        {page.data?.data.map((e) => (
          <li key={e.id} class="card">
            <strong>{ACTIONS[e.action] ?? e.action}</strong> <span title={e.occurredAt}>{time(e.occurredAt)}</span>
            <Fields>
              <Field label="Target">
                <Target event={e} />
              </Field>
              <Field label={e.actor.type === 'portal_link' ? 'Portal link' : 'API key'}>{e.actor.id}</Field>
              {Object.entries(e.changes).map(([field, value]) => (
                <Field key={field} label={field}>
                  {String(value)}
                </Field>
              ))}
              {e.requestId && <Field label="Request">{e.requestId}</Field>}
            </Fields>
          </li>
        ))}
      </ul>
      <CursorPager label="Activity pages" cursors={cursors} onChange={setCursors} next={page.data?.nextCursor} />
    </main>
  );
}
