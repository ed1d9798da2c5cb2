import { useState } from 'preact/hooks';
import { allCalculators, api, type Webhook, type WebhookHealth } from './api.js';
import { reason, time } from './format.js';
import { Writable } from './portal.js';
import { href } from './router.js';
import { Field, Fields, Heading, LoadError, Message, RemoveButton, useAction, useLoad } from './ui.js';

interface Row {
  webhook: Webhook;
  health?: WebhookHealth;
}

async function loadRows(): Promise<Row[]> {
  const webhooks = await api.webhooks();
  return Promise.all(
    webhooks.map(async (webhook) => ({ webhook, health: await api.health(webhook.id).catch(() => undefined) })),
  );
}

export function WebhooksView() {
  // One health request per webhook: refreshed every 30 s so 100 webhooks stay well under the per-key rate limit.
  const rows = useLoad(loadRows, [], 30_000);
  const removal = useAction();

  return (
    <main>
      <Heading>Webhooks</Heading>
      <Message message={removal.message} />
      <LoadError error={rows.error} />
      {rows.data?.length === 0 && <p>No webhooks yet: register one below.</p>}
      <ul class="cards">
        {rows.data?.map(({ webhook, health }) => (
          <li key={webhook.id} class="card">
            <h2>
              <a href={href.webhook(webhook.id)} id={`webhook-${webhook.id}`}>
                {webhook.name || webhook.url}
              </a>
            </h2>
            <Fields>
              <Field label="URL">
                <span class="mono">{webhook.url}</span>
              </Field>
              <Field label="Calculators">{webhook.calculators.map((c) => c.name).join(', ')}</Field>
              <Field label="State">
                <State health={health} />
              </Field>
              <Field label="Failure streak">{health ? health.consecutiveFailures : 'unknown'}</Field>
              <Field label="Last success">{health ? time(health.lastSuccessAt) : 'unknown'}</Field>
            </Fields>
            <Writable>
              <RemoveButton
                what={webhook.name || webhook.url}
                describedBy={`webhook-${webhook.id}`}
                action={removal}
                remove={async () => {
                  await api.remove(webhook.id);
                  await rows.reload();
                }}
              >
                Nothing more is sent to it; its pending deliveries are cancelled. Its delivery history stays.
              </RemoveButton>
            </Writable>
          </li>
        ))}
      </ul>
      <Writable>
        <RegisterWebhook onRegistered={rows.reload} />
      </Writable>
    </main>
  );
}

export function State({ health }: { health?: WebhookHealth }) {
  if (!health) return <>unknown</>;
  return health.state === 'active' ? (
    <span class="badge badge-succeeded">active</span>
  ) : (
    <>
      <span class="badge badge-failed">disabled</span> {reason(health.disabledReason)}
    </>
  );
}

function RegisterWebhook({ onRegistered }: { onRegistered: () => Promise<void> }) {
  const calculators = useLoad(allCalculators, []);
  const [url, setUrl] = useState('');
  const [name, setName] = useState('');
  const [chosen, setChosen] = useState<string[]>([]);
  const action = useAction();

  const submit = (event: Event) => {
    event.preventDefault();
    void action.run(async () => {
      if (chosen.length === 0) throw new Error('Choose at least one calculator.');
      const webhook = await api.register({ url: url.trim(), name: name.trim(), calculators: chosen });
      setUrl('');
      setName('');
      setChosen([]);
      await onRegistered();
      return `Registered ${webhook.name || webhook.url}.`;
    });
  };

  return (
    <section aria-labelledby="register-title" class="card">
      <h2 id="register-title">Register a webhook</h2>
      <form onSubmit={submit}>
        <label for="webhook-url">URL</label>
        <input
          id="webhook-url"
          type="url"
          required
          placeholder="https://example.com/hooks/calc"
          value={url}
          onInput={(e) => setUrl(e.currentTarget.value)}
        />
        <label for="webhook-name">Name (optional)</label>
        <input id="webhook-name" value={name} maxLength={255} onInput={(e) => setName(e.currentTarget.value)} />
        <fieldset>
          <legend>Calculators</legend>
          <LoadError error={calculators.error} />
          {calculators.data?.length === 0 && <p>This workspace has no calculators yet.</p>}
          {calculators.data?.map((c) => (
            <label key={c.id} class="check">
              <input
                type="checkbox"
                checked={chosen.includes(c.id)}
                onChange={(e) =>
                  setChosen(e.currentTarget.checked ? [...chosen, c.id] : chosen.filter((id) => id !== c.id))
                }
              />
              {c.name}
            </label>
          ))}
        </fieldset>
        <button type="submit" disabled={action.busy}>
          Register webhook
        </button>
        <Message message={action.message} />
      </form>
    </section>
  );
}
