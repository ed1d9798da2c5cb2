// Portal mode (DESIGN 10): the console opened by a portal link, signed in for one workspace with a session
// credential (x-ac-portal-session) instead of an API key; read-only sessions show no write control.
import type { ComponentChildren } from 'preact';
import { createContext } from 'preact';
import { useContext, useEffect, useState } from 'preact/hooks';
import { ApiError, api, describeError } from './api.js';
import { portalSession } from './portal-session.js';

const LINK_FRAGMENT = '#portal=';

/**
 * A portal link's token, taken out of the address bar before anything renders (so it is in no later URL,
 * history entry or screenshot of it); null when the page was not opened by a link.
 */
export function takeLinkToken(): string | null {
  if (!location.hash.startsWith(LINK_FRAGMENT)) return null;
  const token = location.hash.slice(LINK_FRAGMENT.length);
  history.replaceState(null, '', `${location.pathname}${location.search}#/webhooks`);
  return token;
}

/** Exchanges the link's token once for a session; a used, expired or revoked link is said so, with no sign-in form. */
export function PortalSignIn({ token, onSignedIn }: { token: string; onSignedIn: () => void }) {
  const [error, setError] = useState<string>();
  useEffect(() => {
    document.title = 'Signing in · Webhook console';
    api
      .openPortalSession(token)
      .then((session) => {
        portalSession.keep(session);
        onSignedIn();
      })
      .catch((e: unknown) =>
        setError(
          e instanceof ApiError && e.status === 401
            ? 'This link was already used, has expired or was revoked. Ask for a new one.'
            : describeError(e),
        ),
      );
  }, [token]);
  return <PortalEnded notice={error} busy={!error} />;
}

/** What a portal shows when it has no session: why, and no API-key form (its users have no key). */
export function PortalEnded({ notice, busy = false }: { notice?: string; busy?: boolean }) {
  return (
    <main class="sign-in" aria-busy={busy ? 'true' : undefined}>
      <h1>Webhook console</h1>
      {busy ? <p role="status">Signing in…</p> : <p role="alert">{notice}</p>}
    </main>
  );
}

const ReadOnly = createContext(false);

export const ReadOnlyProvider = ReadOnly.Provider;

/** A write control: not shown in a read-only portal session (whose writes the API refuses with 403). */
export function Writable({ children }: { children: ComponentChildren }) {
  return useContext(ReadOnly) ? null : <>{children}</>;
}
