import { useEffect, useState } from 'preact/hooks';
import { api, retried, DELIVERY_STATUSES, type Recovery, type RotatedSecret, type Webhook } from './api.js';
import { fromLocalInput, time, toLocalInput } from './format.js';
import { Writable } from './portal.js';
import { href } from './router.js';
import { Settings } from './settings.js';
import { FilterSection } from './submissions.js';
import { Field, Fields, Heading, LoadError, Message, ShownSecret, StatusBadge, useAction, useLoad } from './ui.js';
import { State } from './webhooks.js';

const PAGE = 20;

export function WebhookView({ webhookId }: { webhookId: string }) {
  const webhook = useLoad(async () => (await api.webhooks()).find((w) => w.id === webhookId), [webhookId]);
  const health = useLoad(() => api.health(webhookId), [webhookId], 3000);
  const action = useAction();
  // Bumped after each action so the delivery list shows what it changed (a test event, skipped deliveries).
  const [changes, setChanges] = useState(0);
  const disabled = health.data?.state === 'disabled';

  const act = (run: () => Promise<string>) =>
    action.run(async () => {
      const text = await run();
      setChanges((n) => n + 1);
      await health.reload();
      return text;
    });

  const enable = async () => {
    await api.enable(webhookId);
    return 'Enabled: new submissions are sent again. Recover what was skipped below.';
  };
  const disable = async () => {
    await api.disable(webhookId);
    return 'Disabled: nothing is sent until you enable it; new deliveries are kept as skipped.';
  };
  const sendTest = async () => `Test event queued as delivery ${(await api.sendTest(webhookId)).id}.`;

  if (webhook.data === undefined && !webhook.error) return <main aria-busy="true">Loading…</main>;
  if (!webhook.data)
    return (
      <main>
        <LoadError error={webhook.error ?? 'This webhook does not exist or was removed.'} />
      </main>
    );
  const w: Webhook = webhook.data;

  return (
    <main>
      <p>
        <a href={href.webhooks()}>← Webhooks</a>
      </p>
      <Heading>{w.name || w.url}</Heading>
      <section aria-labelledby="health-title" class="card">
        <h2 id="health-title">Health</h2>
        <LoadError error={health.error} />
        <Fields>
          <Field label="URL">
            <span class="mono">{w.url}</span>
          </Field>
          <Field label="Calculators">
            {w.calculators.map((c, i) => (
              <span key={c.id}>
                {i > 0 && ', '}
                <a href={href.submissions(c.id)} aria-label={`Submissions of ${c.name}`}>
                  {c.name}
                </a>
              </span>
            ))}
          </Field>
          {health.data && (
            <>
              <Field label="State">
                <State health={health.data} />
              </Field>
              {health.data.disabledAt && <Field label="Disabled at">{time(health.data.disabledAt)}</Field>}
              <Field label="Failure streak">{health.data.consecutiveFailures}</Field>
              <Field label="Last attempt">{time(health.data.lastAttemptAt)}</Field>
              <Field label="Last success">{time(health.data.lastSuccessAt)}</Field>
              <Field label="Last error">{health.data.lastError ?? 'none'}</Field>
              <Field label="Pending deliveries">{health.data.pendingDeliveries}</Field>
            </>
          )}
        </Fields>
        <Writable>
          <div class="actions">
            {disabled ? (
              <ActionButton name="Enable" busy={action.busy} onClick={() => act(enable)} />
            ) : (
              <ActionButton name="Disable" busy={action.busy} onClick={() => act(disable)} />
            )}
            <ActionButton name="Send test event" busy={action.busy || disabled} onClick={() => act(sendTest)} />
          </div>
        </Writable>
        <Message message={action.message} />
      </section>
      <Deliveries webhookId={webhookId} changes={changes} />
      <FilterSection webhookId={webhookId} calculators={w.calculators} />
      <Writable>
        <Settings webhookId={webhookId} onRenamed={() => void webhook.reload()} />
        <RotateSecret webhookId={webhookId} />
        <Recover webhookId={webhookId} disabled={disabled} />
      </Writable>
    </main>
  );
}

function ActionButton({ name, busy, onClick }: { name: string; busy: boolean; onClick: () => void }) {
  return (
    <button type="button" disabled={busy} onClick={onClick}>
      {name}
    </button>
  );
}

function Deliveries({ webhookId, changes }: { webhookId: string; changes: number }) {
  const [status, setStatus] = useState('');
  const [offset, setOffset] = useState(0);
  // One more than a page tells whether an older page exists.
  const page = useLoad(
    () => api.deliveries(webhookId, { status: status || undefined, limit: PAGE + 1, offset }),
    [webhookId, status, offset, changes],
    3000,
  );
  const action = useAction();
  const rows = page.data?.slice(0, PAGE);

  return (
    <section aria-labelledby="deliveries-title" class="card">
      <h2 id="deliveries-title">Deliveries</h2>
      <label for="status-filter">Status</label>
      <select
        id="status-filter"
        value={status}
        onChange={(e) => {
          setStatus(e.currentTarget.value);
          setOffset(0);
        }}
      >
        <option value="">all</option>
        {DELIVERY_STATUSES.map((s) => (
          <option key={s} value={s}>
            {s}
          </option>
        ))}
      </select>
      <LoadError error={page.error} />
      <Message message={action.message} />
      {rows?.length === 0 && <p>No deliveries{status ? ` with status ${status}` : ''}.</p>}
      <ul class="cards compact" aria-label="Deliveries of this webhook">
        {rows?.map((d) => (
          <li key={d.id} class="card">
            <a href={href.delivery(webhookId, d.id)} id={`delivery-${d.id}`}>
              <StatusBadge status={d.status} /> {time(d.createdAt)}
            </a>
            <Fields>
              <Field label="Attempts">{d.attemptCount}</Field>
              <Field label="Last status code">{d.lastStatusCode ?? 'none'}</Field>
              {d.lastError && <Field label="Last error">{d.lastError}</Field>}
            </Fields>
            {d.status !== 'cancelled' && (
              <Writable>
                <button
                  type="button"
                  aria-describedby={`delivery-${d.id}`}
                  disabled={action.busy}
                  onClick={() =>
                    action.run(async () => {
                      await api.retry(webhookId, d.id);
                      await page.reload();
                      return retried(d.status);
                    })
                  }
                >
                  Retry
                </button>
              </Writable>
            )}
          </li>
        ))}
      </ul>
      <nav class="pager" aria-label="Delivery pages">
        <button type="button" disabled={offset === 0} onClick={() => setOffset(Math.max(0, offset - PAGE))}>
          Newer
        </button>
        <button type="button" disabled={(page.data?.length ?? 0) <= PAGE} onClick={() => setOffset(offset + PAGE)}>
          Older
        </button>
      </nav>
    </section>
  );
}

function RotateSecret({ webhookId }: { webhookId: string }) {
  const [hours, setHours] = useState('24');
  const [secret, setSecret] = useState<RotatedSecret>();
  const action = useAction();
  useEffect(() => setSecret(undefined), [webhookId]);

  const rotate = (event: Event) => {
    event.preventDefault();
    void action.run(async () => {
      setSecret(await api.rotateSecret(webhookId, Math.round(Number(hours) * 3600)));
    });
  };

  return (
    <section aria-labelledby="secret-title" class="card">
      <h2 id="secret-title">Signing secret</h2>
      <p>
        Rotating makes a new secret. During the overlap every delivery is signed with both the new and the previous
        secret, so your receiver keeps accepting deliveries while you update it; after the overlap only the new one
        signs.
      </p>
      <form onSubmit={rotate}>
        <label for="overlap-hours">Overlap in hours (0 to 168)</label>
        <input
          id="overlap-hours"
          type="number"
          min="0"
          max="168"
          step="any"
          required
          value={hours}
          onInput={(e) => setHours(e.currentTarget.value)}
        />
        <button type="submit" disabled={action.busy}>
          Rotate secret
        </button>
      </form>
      <Message message={action.message} />
      {secret && (
        <ShownSecret secret={secret.key}>
          <p>
            {secret.previousKeyExpiresAt
              ? `The previous secret keeps signing too until ${time(secret.previousKeyExpiresAt)}.`
              : 'The previous secret stopped signing at once (no overlap).'}
          </p>
        </ShownSecret>
      )}
    </section>
  );
}

function Recover({ webhookId, disabled }: { webhookId: string; disabled: boolean }) {
  const [since, setSince] = useState(() => toLocalInput(new Date(Date.now() - 24 * 3600_000)));
  const [until, setUntil] = useState('');
  const [matched, setMatched] = useState<{ count: number; since: string; until: string }>();
  const [recovery, setRecovery] = useState<Recovery>();
  const action = useAction();
  const counted = matched && matched.since === since && matched.until === until;

  useEffect(() => {
    if (recovery?.status !== 'running') return;
    const timer = setInterval(async () => {
      setRecovery(await api.recovery(webhookId, recovery.id).catch(() => recovery));
    }, 1000);
    return () => clearInterval(timer);
  }, [recovery?.id, recovery?.status]);

  const count = (event: Event) => {
    event.preventDefault();
    void action.run(async () => {
      const result = await api.recoverCount(webhookId, fromLocalInput(since)!, fromLocalInput(until));
      setMatched({ count: result.matched, since, until });
    });
  };
  const recover = () =>
    action.run(async () => {
      setRecovery(await api.recover(webhookId, fromLocalInput(since)!, fromLocalInput(until)));
      setMatched(undefined);
    });

  return (
    <section aria-labelledby="recover-title" class="card">
      <h2 id="recover-title">Recover</h2>
      <p>
        Send again every failed or skipped delivery of this webhook created in a time window, one more attempt each.
      </p>
      {disabled && <p>Enable the webhook first: a disabled webhook cannot be recovered.</p>}
      <form onSubmit={count}>
        <label for="recover-since">Since</label>
        <input
          id="recover-since"
          type="datetime-local"
          required
          value={since}
          onInput={(e) => setSince(e.currentTarget.value)}
        />
        <label for="recover-until">Until (empty for now)</label>
        <input
          id="recover-until"
          type="datetime-local"
          value={until}
          onInput={(e) => setUntil(e.currentTarget.value)}
        />
        <button type="submit" disabled={action.busy || disabled}>
          Count deliveries
        </button>
      </form>
      {counted && (
        <p role="status">
          {matched.count === 1 ? '1 delivery matches.' : `${matched.count} deliveries match.`}
          {matched.count > 0 ? ' Nothing has been sent yet.' : ''}
        </p>
      )}
      <button type="button" onClick={recover} disabled={!counted || matched.count === 0 || action.busy || disabled}>
        Recover
      </button>
      <Message message={action.message} />
      {recovery && (
        <div role="status" class="progress">
          <p>
            Recovery {recovery.status}: {recovery.requeued} of {recovery.matched} requeued
            {recovery.completedAt ? `, finished ${time(recovery.completedAt)}` : ''}.
          </p>
          <progress max={Math.max(recovery.matched, 1)} value={recovery.requeued} aria-label="Recovery progress" />
        </div>
      )}
    </section>
  );
}
