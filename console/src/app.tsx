import { useEffect, useState } from 'preact/hooks';
import { ActivityView } from './activity.js';
import { session, whenUnauthenticated } from './api.js';
import { DeliveryView } from './delivery.js';
import { FailedView } from './failed.js';
import { OperationalWebhooksView } from './operational-webhooks.js';
import { PortalEnded, PortalSignIn, ReadOnlyProvider } from './portal.js';
import { portalSession } from './portal-session.js';
import { href, useRoute } from './router.js';
import { SignIn } from './sign-in.js';
import { SubmissionsView } from './submissions.js';
import { WebhookView } from './webhook.js';
import { WebhooksView } from './webhooks.js';

/** `linkToken`: the portal link's token the page was opened with (DESIGN 10), already out of the address bar. */
export function App({ linkToken }: { linkToken: string | null }) {
  const [opening, setOpening] = useState(linkToken);
  const [portal, setPortal] = useState(portalSession.get);
  const [signedIn, setSignedIn] = useState(() => session.key() !== null || portal !== null);
  const [notice, setNotice] = useState<string>();
  const route = useRoute();

  // In portal mode there is no key to sign in with again: the portal says it ended, and how to come back.
  const endPortal = (text: string) => {
    portalSession.forget();
    setNotice(text);
    setSignedIn(false);
  };

  useEffect(
    () =>
      whenUnauthenticated(() => {
        if (portalSession.get()) return endPortal('This session has ended: its link expired or was revoked.');
        session.signOut();
        setNotice('Your API key is no longer accepted (revoked?): sign in again.');
        setSignedIn(false);
      }),
    [],
  );

  if (opening)
    return (
      <PortalSignIn
        token={opening}
        onSignedIn={() => {
          session.signOut(); // a portal link replaces whatever key this tab held
          setOpening(null);
          setPortal(portalSession.get());
          setSignedIn(true);
        }}
      />
    );

  if (!signedIn && portal) return <PortalEnded notice={notice} />;

  if (!signedIn)
    return (
      <SignIn
        notice={notice}
        onSignedIn={() => {
          setNotice(undefined);
          setSignedIn(true);
        }}
      />
    );

  const signOut = () => {
    location.hash = '';
    if (portal) return endPortal('Signed out: this tab has forgotten the session. Open a new link to come back.');
    session.signOut();
    setNotice('Signed out: this tab has forgotten the key.');
    setSignedIn(false);
  };

  return (
    <ReadOnlyProvider value={portal?.readOnly ?? false}>
      <header>
        <span class="brand">Webhook console</span>
        {portal?.readOnly && <span class="badge">read-only</span>}
        <nav aria-label="Main">
          <a href={href.webhooks()} aria-current={route.view === 'webhooks' ? 'page' : undefined}>
            Webhooks
          </a>
          <a href={href.failed()} aria-current={route.view === 'failed' ? 'page' : undefined}>
            Failed deliveries
          </a>
          <a href={href.activity()} aria-current={route.view === 'activity' ? 'page' : undefined}>
            Activity
          </a>
          <a href={href.operational()} aria-current={route.view === 'operational' ? 'page' : undefined}>
            Operational webhooks
          </a>
        </nav>
        <button type="button" onClick={signOut}>
          Sign out
        </button>
      </header>
      <div>
        {route.view === 'webhooks' && <WebhooksView />}
        {route.view === 'webhook' && <WebhookView key={route.webhookId} webhookId={route.webhookId} />}
        {route.view === 'delivery' && (
          <DeliveryView key={route.deliveryId} webhookId={route.webhookId} deliveryId={route.deliveryId} />
        )}
        {route.view === 'failed' && <FailedView />}
        {route.view === 'activity' && <ActivityView />}
        {route.view === 'operational' && <OperationalWebhooksView />}
        {route.view === 'submissions' && <SubmissionsView key={route.calculatorId} calculatorId={route.calculatorId} />}
      </div>
    </ReadOnlyProvider>
  );
}
