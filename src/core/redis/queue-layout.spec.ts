import { QueueLayout } from './queue-layout.js';

describe('QueueLayout', () => {
  it('keeps every key under QUEUE_PREFIX with one Redis and one queue, as before shards', () => {
    const layout = new QueueLayout('cw', 1, false);
    expect(layout.deliveryPrefixes).toEqual(['cw']);
    expect(layout.maintenancePrefix).toBe('cw');
    expect(layout.shardOf('hooks.zapier.com')).toBe(0);
  });

  it('gives each queue its own hash tag with shards or on a cluster', () => {
    expect(new QueueLayout('cw', 3, false).deliveryPrefixes).toEqual(['cw:{d0}', 'cw:{d1}', 'cw:{d2}']);
    const cluster = new QueueLayout('cw', 1, true);
    expect(cluster.deliveryPrefixes).toEqual(['cw:{d0}']);
    expect(cluster.maintenancePrefix).toBe('cw:{m}');
  });

  it('puts a host in the same shard every time, and spreads hosts over the shards', () => {
    const layout = new QueueLayout('cw', 16, true);
    expect(layout.shardOf('hooks.zapier.com')).toBe(layout.shardOf('hooks.zapier.com'));
    const used = new Set(Array.from({ length: 200 }, (_, i) => layout.shardOf(`host-${i}.example.com:443`)));
    expect(used.size).toBe(16);
  });
});
