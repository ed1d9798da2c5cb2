import { useEffect, useState } from 'preact/hooks';
import { ApiError, api, describeError, session } from './api.js';

export function SignIn({ onSignedIn, notice }: { onSignedIn: () => void; notice?: string }) {
  const [key, setKey] = useState('');
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  useEffect(() => {
    document.title = 'Sign in · Webhook console';
  }, []);

  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      await api.checkKey(key.trim());
      session.signIn(key.trim());
      setKey('');
      onSignedIn();
    } catch (e) {
      setError(
        e instanceof ApiError && e.status === 401
          ? 'That API key was not accepted: it is wrong, or it was revoked. Check it and try again.'
          : describeError(e),
      );
    } finally {
      setBusy(false);
    }
  };

  return (
    <main class="sign-in">
      <h1>Webhook console</h1>
      <p>Sign in with an API key of your workspace. It is kept in this tab only and forgotten when you sign out.</p>
      {notice && <p role="status">{notice}</p>}
      <form onSubmit={submit}>
        <label for="api-key">API key</label>
        <input
          id="api-key"
          type="password"
          autocomplete="off"
          spellcheck={false}
          required
          value={key}
          onInput={(e) => setKey(e.currentTarget.value)}
          aria-invalid={error ? 'true' : undefined}
          aria-describedby={error ? 'sign-in-error' : undefined}
        />
        <button type="submit" disabled={busy}>
          Sign in
        </button>
        {error && (
          <p id="sign-in-error" class="message error" role="alert">
            {error}
          </p>
        )}
      </form>
    </main>
  );
}
