import { useState } from 'preact/hooks';
import { api, OPERATIONAL_EVENTS } from './api.js';
import { time } from './format.js';
import { Writable } from './portal.js';
import { Field, Fields, Heading, LoadError, Message, RemoveButton, ShownSecret, useAction, useLoad } from './ui.js';

/** The workspace's receivers of operational events (DESIGN 10): listed, registered, removed. */
export function OperationalWebhooksView() {
  const hooks = useLoad(api.operationalWebhooks, [], 30_000);
  const removal = useAction();

  return (
    <main>
      <Heading>Operational webhooks</Heading>
      <p>
        Receivers of what happens to this workspace's webhooks: a webhook disabled or enabled, a delivery that failed, a
        recovery completed. Events are signed and retried like any delivery.
      </p>
      <Message message={removal.message} />
      <LoadError error={hooks.error} />
      {hooks.data?.length === 0 && <p>No operational webhooks yet: register one below.</p>}
      <ul class="cards">
        {hooks.data?.map((hook) => (
          <li key={hook.id} class="card">
            <h2 class="mono" id={`operational-${hook.id}`}>
              {hook.url}
            </h2>
            <Fields>
              <Field label="Events">{hook.events.join(', ')}</Field>
              <Field label="Last attempt">{time(hook.lastAttemptAt)}</Field>
              <Field label="Last success">{time(hook.lastSuccessAt)}</Field>
              {hook.lastError && <Field label="Last error">{hook.lastError}</Field>}
            </Fields>
            <Writable>
              <RemoveButton
                what={hook.url}
                describedBy={`operational-${hook.id}`}
                action={removal}
                remove={async () => {
                  await api.removeOperational(hook.id);
                  await hooks.reload();
                }}
              >
                Nothing more is sent to it; its pending events are cancelled.
              </RemoveButton>
            </Writable>
          </li>
        ))}
      </ul>
      <Writable>
        <RegisterOperationalWebhook onRegistered={hooks.reload} />
      </Writable>
    </main>
  );
}

function RegisterOperationalWebhook({ onRegistered }: { onRegistered: () => Promise<void> }) {
  const [url, setUrl] = useState('');
  const [chosen, setChosen] = useState<string[]>([]);
  const [secret, setSecret] = useState<string>();
  const action = useAction();

  const submit = (event: Event) => {
    event.preventDefault();
    void action.run(async () => {
      if (chosen.length === 0) throw new Error('Choose at least one event.');
      const created = await api.registerOperational({ url: url.trim(), events: chosen });
      setSecret(created.secret);
      setUrl('');
      setChosen([]);
      await onRegistered();
      return `Registered ${created.url}.`;
    });
  };

  return (
    <section aria-labelledby="register-operational-title" class="card">
      <h2 id="register-operational-title">Register an operational webhook</h2>
      <form onSubmit={submit}>
        <label for="operational-url">URL</label>
        <input
          id="operational-url"
          type="url"
          required
          placeholder="https://example.com/hooks/operations"
          value={url}
          onInput={(e) => setUrl(e.currentTarget.value)}
        />
        <fieldset>
          <legend>Events</legend>
          {OPERATIONAL_EVENTS.map((type) => (
            <label key={type} class="check">
              <input
                type="checkbox"
                checked={chosen.includes(type)}
                onChange={(e) =>
                  setChosen(e.currentTarget.checked ? [...chosen, type] : chosen.filter((t) => t !== type))
                }
              />
              {type}
            </label>
          ))}
        </fieldset>
        <button type="submit" disabled={action.busy}>
          Register operational webhook
        </button>
        <Message message={action.message} />
      </form>
      {secret && <ShownSecret secret={secret} />}
    </section>
  );
}
