import { useEffect, useState } from 'preact/hooks';
import { ActivityView } from './activity.js';
import { session, whenUnauthenticated } from './api.js';
import { DeliveryView } from './delivery.js';
import { FailedView } from './failed.js';
import { OperationalWebhooksView } from './operational-webhooks.js';
import { href, useRoute } from './router.js';
import { SignIn } from './sign-in.js';
import { WebhookView } from './webhook.js';
import { WebhooksView } from './webhooks.js';

export function App() {
  const [signedIn, setSignedIn] = useState(() => session.key() !== null);
  const [notice, setNotice] = useState<string>();
  const route = useRoute();

  useEffect(
    () =>
      whenUnauthenticated(() => {
        session.signOut();
        setNotice('Your API key is no longer accepted (revoked?): sign in again.');
        setSignedIn(false);
      }),
    [],
  );

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
    session.signOut();
    setNotice('Signed out: this tab has forgotten the key.');
    setSignedIn(false);
    location.hash = '';
  };

  return (
    <>
      <header>
        <span class="brand">Webhook console</span>
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
      </div>
    </>
  );
}
