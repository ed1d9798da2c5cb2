import { useEffect, useState } from 'preact/hooks';

// Hash routes keep everything on /console/ (one HTML page, no server routes); the key never goes in them.
export type Route =
  | { view: 'webhooks' }
  | { view: 'webhook'; webhookId: string }
  | { view: 'delivery'; webhookId?: string; deliveryId: string }
  | { view: 'failed' }
  | { view: 'activity' }
  | { view: 'operational' }
  | { view: 'submissions'; calculatorId: string };

export const href = {
  webhooks: () => '#/webhooks',
  webhook: (webhookId: string) => `#/webhooks/${encodeURIComponent(webhookId)}`,
  delivery: (webhookId: string, deliveryId: string) =>
    `#/webhooks/${encodeURIComponent(webhookId)}/deliveries/${encodeURIComponent(deliveryId)}`,
  workspaceDelivery: (deliveryId: string) => `#/deliveries/${encodeURIComponent(deliveryId)}`,
  failed: () => '#/failed',
  activity: () => '#/activity',
  operational: () => '#/operational-webhooks',
  submissions: (calculatorId: string) => `#/calculators/${encodeURIComponent(calculatorId)}/submissions`,
};

function parse(hash: string): Route {
  const parts = hash.replace(/^#\/?/, '').split('/').map(decodeURIComponent);
  if (parts[0] === 'webhooks' && parts[1] && parts[2] === 'deliveries' && parts[3])
    return { view: 'delivery', webhookId: parts[1], deliveryId: parts[3] };
  if (parts[0] === 'webhooks' && parts[1]) return { view: 'webhook', webhookId: parts[1] };
  if (parts[0] === 'deliveries' && parts[1]) return { view: 'delivery', deliveryId: parts[1] };
  if (parts[0] === 'failed') return { view: 'failed' };
  if (parts[0] === 'activity') return { view: 'activity' };
  if (parts[0] === 'operational-webhooks') return { view: 'operational' };
  if (parts[0] === 'calculators' && parts[1] && parts[2] === 'submissions')
    return { view: 'submissions', calculatorId: parts[1] };
  return { view: 'webhooks' };
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parse(location.hash));
  useEffect(() => {
    const update = () => setRoute(parse(location.hash));
    addEventListener('hashchange', update);
    return () => removeEventListener('hashchange', update);
  }, []);
  return route;
}
