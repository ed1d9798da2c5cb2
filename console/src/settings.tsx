import { useEffect, useState } from 'preact/hooks';
import { api, RETRY_SCHEDULES, type SettingsChange, type WebhookSettings } from './api.js';
import { LoadError, Message, useAction, useLoad } from './ui.js';

const SCHEDULES: Record<WebhookSettings['retrySchedule'], string> = {
  standard: 'standard: 8 attempts over about a day',
  short: 'short: 5 attempts within an hour',
  none: 'none: one attempt, no retry',
};

/** The form's text for a number the webhook may not have of its own: empty means the service default. */
const own = (value: number | null, isDefault: boolean) => (isDefault || value === null ? '' : String(value));
const numberOrNull = (text: string) => (text.trim() === '' ? null : Number(text));

/** Only what differs from the settings loaded, so the audit log records what was really changed. */
function changesOf(
  s: WebhookSettings,
  form: { name: string; timeoutMs: string; maxInFlight: string; retrySchedule: string },
): SettingsChange {
  const change: SettingsChange = {};
  if (form.name !== s.name) change.name = form.name;
  if (form.timeoutMs !== own(s.timeoutMs, s.defaults.timeoutMs)) change.timeoutMs = numberOrNull(form.timeoutMs);
  if (form.maxInFlight !== own(s.maxInFlight, s.defaults.maxInFlight)) {
    change.maxInFlight = numberOrNull(form.maxInFlight);
  }
  if (form.retrySchedule !== s.retrySchedule) {
    change.retrySchedule = form.retrySchedule as WebhookSettings['retrySchedule'];
  }
  return change;
}

/** A webhook's settings (PATCH /webhooks/{id}): name, limits, retry schedule and custom request headers. */
export function Settings({ webhookId, onRenamed }: { webhookId: string; onRenamed: () => void }) {
  const settings = useLoad(() => api.settings(webhookId), [webhookId]);
  const [form, setForm] = useState({ name: '', timeoutMs: '', maxInFlight: '', retrySchedule: 'standard' });
  const action = useAction();
  const s = settings.data;

  useEffect(() => {
    if (!s) return;
    setForm({
      name: s.name,
      timeoutMs: own(s.timeoutMs, s.defaults.timeoutMs),
      maxInFlight: own(s.maxInFlight, s.defaults.maxInFlight),
      retrySchedule: s.retrySchedule,
    });
  }, [s]);

  const set = (field: keyof typeof form) => (e: { currentTarget: { value: string } }) =>
    setForm({ ...form, [field]: e.currentTarget.value });

  const save = (event: Event) => {
    event.preventDefault();
    if (!s) return;
    void action.run(async () => {
      const change = changesOf(s, form);
      if (Object.keys(change).length === 0) return 'Nothing to save: the settings are as shown.';
      await api.updateSettings(webhookId, change);
      await settings.reload();
      if (change.name !== undefined) onRenamed();
      return 'Settings saved: workers apply them from their next attempt of this webhook.';
    });
  };

  return (
    <section aria-labelledby="settings-title" class="card">
      <h2 id="settings-title">Settings</h2>
      <LoadError error={settings.error} />
      {s && (
        <>
          <form onSubmit={save}>
            <label for="settings-name">Name</label>
            <input id="settings-name" maxLength={255} value={form.name} onInput={set('name')} />
            <label for="settings-timeout">Timeout in ms (1000 to 30000; empty for the default)</label>
            <input
              id="settings-timeout"
              type="number"
              min="1000"
              max="30000"
              step="1"
              placeholder={s.defaults.timeoutMs ? `default: ${s.timeoutMs}` : 'service default'}
              value={form.timeoutMs}
              onInput={set('timeoutMs')}
            />
            <label for="settings-in-flight">Requests in flight at most (1 to 100; empty for the default)</label>
            <input
              id="settings-in-flight"
              type="number"
              min="1"
              max="100"
              step="1"
              placeholder={s.defaults.maxInFlight ? `default: ${s.maxInFlight ?? 'no cap'}` : 'service default'}
              value={form.maxInFlight}
              onInput={set('maxInFlight')}
            />
            <label for="settings-schedule">Retry schedule</label>
            <select id="settings-schedule" value={form.retrySchedule} onChange={set('retrySchedule')}>
              {RETRY_SCHEDULES.map((name) => (
                <option key={name} value={name}>
                  {SCHEDULES[name]}
                </option>
              ))}
            </select>
            <button type="submit" disabled={action.busy}>
              Save settings
            </button>
          </form>
          <Message message={action.message} />
          <Headers webhookId={webhookId} headers={s.headers} reload={settings.reload} />
        </>
      )}
    </section>
  );
}

/** Custom request headers: listed by name with the value masked; added (or replaced) and removed one by one. */
function Headers({
  webhookId,
  headers,
  reload,
}: {
  webhookId: string;
  headers: Record<string, string>;
  reload: () => Promise<void>;
}) {
  const [name, setName] = useState('');
  const [value, setValue] = useState('');
  const action = useAction();
  const names = Object.keys(headers);

  const change = (patch: Record<string, string | null>, done: string, then: () => void = () => undefined) =>
    action.run(async () => {
      await api.updateSettings(webhookId, { headers: patch });
      then();
      await reload();
      return done;
    });

  const add = (event: Event) => {
    event.preventDefault();
    const header = name.trim();
    void change({ [header]: value }, `Header ${header} saved; its value is not shown again.`, () => {
      setName('');
      setValue('');
    });
  };

  return (
    <div>
      <h3 id="headers-title">Request headers</h3>
      <p>
        Sent with every delivery, e.g. an Authorization header your receiver demands. Values are kept secret: only their
        beginning is shown, and they are never logged.
      </p>
      {names.length === 0 && <p>No custom headers.</p>}
      <ul class="cards compact" aria-labelledby="headers-title">
        {names.map((header) => (
          <li key={header} class="card">
            <span class="mono">
              {header}: {headers[header]}
            </span>{' '}
            <button
              type="button"
              aria-label={`Remove header ${header}`}
              disabled={action.busy}
              onClick={() => void change({ [header]: null }, `Header ${header} removed.`)}
            >
              Remove
            </button>
          </li>
        ))}
      </ul>
      <form onSubmit={add}>
        <label for="header-name">Header name</label>
        <input
          id="header-name"
          required
          autoComplete="off"
          value={name}
          onInput={(e) => setName(e.currentTarget.value)}
        />
        <label for="header-value">Header value</label>
        <input
          id="header-value"
          type="password"
          required
          autoComplete="off"
          value={value}
          onInput={(e) => setValue(e.currentTarget.value)}
        />
        <button type="submit" disabled={action.busy}>
          Add header
        </button>
      </form>
      <Message message={action.message} />
    </div>
  );
}
