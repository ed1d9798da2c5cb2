import { api, retried } from './api.js';
import { duration, time } from './format.js';
import { Writable } from './portal.js';
import { href } from './router.js';
import { Field, Fields, Heading, LoadError, Message, StatusBadge, useAction, useLoad } from './ui.js';

export function DeliveryView({ webhookId, deliveryId }: { webhookId?: string; deliveryId: string }) {
  const delivery = useLoad(
    () => (webhookId ? api.delivery(webhookId, deliveryId) : api.workspaceDelivery(deliveryId)),
    [webhookId, deliveryId],
    3000,
  );
  const action = useAction();
  const d = delivery.data;

  return (
    <main>
      <p>
        {webhookId ? <a href={href.webhook(webhookId)}>← Webhook</a> : <a href={href.failed()}>← Failed deliveries</a>}
      </p>
      <Heading>Delivery {deliveryId}</Heading>
      <LoadError error={delivery.error} />
      {d && (
        <>
          <section class="card" aria-labelledby="delivery-summary">
            <h2 id="delivery-summary">Status</h2>
            <Fields>
              <Field label="Status">
                <StatusBadge status={d.status} />
              </Field>
              <Field label="Webhook">
                {/* An operational event's delivery (DESIGN 10) went to an operational webhook. */}
                <a href={d.event === 'newSubmission' ? href.webhook(d.webhookId) : href.operational()} class="mono">
                  {d.webhookId}
                </a>
              </Field>
              <Field label="Event">{d.event}</Field>
              <Field label="Created">{time(d.createdAt)}</Field>
              <Field label="Attempts">{`${d.attemptCount} of ${d.maxAttempts}`}</Field>
              {d.status === 'pending' && <Field label="Next attempt">{time(d.nextAttemptAt)}</Field>}
              {d.completedAt && <Field label="Ended">{time(d.completedAt)}</Field>}
            </Fields>
            {d.status !== 'cancelled' && d.event === 'newSubmission' && (
              <Writable>
                <button
                  type="button"
                  disabled={action.busy}
                  onClick={() =>
                    action.run(async () => {
                      await api.retry(d.webhookId, d.id);
                      await delivery.reload();
                      return retried(d.status);
                    })
                  }
                >
                  Retry
                </button>
              </Writable>
            )}
            <Message message={action.message} />
          </section>
          <section class="card" aria-labelledby="attempts-title">
            <h2 id="attempts-title">Attempts</h2>
            {d.attempts.length === 0 && <p>No attempt yet.</p>}
            <ol class="cards compact" aria-label="Attempts">
              {d.attempts.map((a) => (
                <li key={a.attemptNumber} class="card">
                  <h3>
                    Attempt {a.attemptNumber} <StatusBadge status={a.succeeded ? 'succeeded' : 'failed'} />
                  </h3>
                  <Fields>
                    <Field label="Started">{time(a.startedAt)}</Field>
                    <Field label="Duration">{duration(a.durationMs)}</Field>
                    <Field label="Status code">{a.statusCode ?? 'none'}</Field>
                    {a.trigger === 'manual' && <Field label="Trigger">manual retry</Field>}
                    {a.error && <Field label="Error">{a.error}</Field>}
                  </Fields>
                  {a.responseBody && (
                    <details>
                      <summary>Response excerpt</summary>
                      <pre>{a.responseBody}</pre>
                    </details>
                  )}
                </li>
              ))}
            </ol>
          </section>
          <section class="card" aria-labelledby="payload-title">
            <h2 id="payload-title">Payload</h2>
            <pre class="payload" tabIndex={0} aria-label="Payload JSON">
              {JSON.stringify(d.payload, null, 2)}
            </pre>
          </section>
        </>
      )}
    </main>
  );
}
