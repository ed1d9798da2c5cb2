import { ConfigError, loadConfig } from './config.js';

describe('loadConfig', () => {
  it('works with no environment at all: local Postgres and Redis on their standard ports', () => {
    const config = loadConfig({});
    expect(config.databaseUrl).toBe('postgres://postgres@127.0.0.1:5432/calc_webhooks');
    expect(config.redisUrl).toBe('redis://127.0.0.1:6379');
    expect(config.env).toBe('development');
    expect(config.seedDemo).toBe(true);
    expect(config.allowPrivateTargets).toBe(true);
    expect(config.retryScheduleMs).toEqual([5000, 300000, 1800000, 7200000, 18000000, 36000000, 36000000]);
  });

  it('turns the SSRF guard on and the demo seed off in production by default', () => {
    const config = loadConfig({ NODE_ENV: 'production' });
    expect(config.allowPrivateTargets).toBe(false);
    expect(config.seedDemo).toBe(false);
  });

  it('bounds slow clients by default: 10 s for the headers, 30 s for the request, 5 s idle keep-alive', () => {
    expect(loadConfig({}).httpTimeouts).toEqual({ headersMs: 10_000, requestMs: 30_000, keepAliveMs: 5_000 });
    expect(
      loadConfig({ HTTP_HEADERS_TIMEOUT_MS: '500', HTTP_REQUEST_TIMEOUT_MS: '500', HTTP_KEEP_ALIVE_TIMEOUT_MS: '100' })
        .httpTimeouts,
    ).toEqual({ headersMs: 500, requestMs: 500, keepAliveMs: 100 });
  });

  it('reads the short schedule a webhook may choose: 4 delays, by default 30s,2m,10m,30m', () => {
    expect(loadConfig({}).shortRetryScheduleMs).toEqual([30_000, 120_000, 600_000, 1_800_000]);
    expect(loadConfig({ DELIVERY_RETRY_SCHEDULE_SHORT: '50ms,50ms,1s,2m' }).shortRetryScheduleMs).toEqual([
      50, 50, 1000, 120_000,
    ]);
  });

  it('parses the retry schedule units', () => {
    expect(loadConfig({ DELIVERY_RETRY_SCHEDULE: '100ms, 2s,3m,1h,7' }).retryScheduleMs).toEqual([
      100, 2000, 180000, 3600000, 7,
    ]);
  });

  it('reads the section 7 durations with their defaults (5d, 10 failures, 30d) and units ms to d', () => {
    const defaults = loadConfig({});
    expect(defaults.webhookDisable).toEqual({ afterMs: 5 * 86_400_000, minFailures: 10 });
    expect(defaults.deliveryRetentionMs).toBe(30 * 86_400_000);
    const set = loadConfig({
      WEBHOOK_DISABLE_AFTER: '0',
      WEBHOOK_DISABLE_MIN_FAILURES: '3',
      DELIVERY_RETENTION: '90m',
    });
    expect(set.webhookDisable).toEqual({ afterMs: 0, minFailures: 3 });
    expect(set.deliveryRetentionMs).toBe(90 * 60_000);
    expect(loadConfig({ DELIVERY_RETRY_SCHEDULE: '1d' }).retryScheduleMs).toEqual([86_400_000]);
  });

  it('reads the partitions of the delivery tables (DESIGN 9): a week each, a week ahead, by default', () => {
    expect(loadConfig({}).deliveryPartitions).toEqual({ intervalMs: 7 * 86_400_000, aheadMs: 7 * 86_400_000 });
    expect(
      loadConfig({ DELIVERY_PARTITION_INTERVAL: '1h', DELIVERY_PARTITIONS_AHEAD: '2d' }).deliveryPartitions,
    ).toEqual({ intervalMs: 3_600_000, aheadMs: 2 * 86_400_000 });
  });

  it.each([
    ['WEBHOOK_DISABLE_AFTER', '5 days'],
    ['WEBHOOK_DISABLE_MIN_FAILURES', '0'],
    ['DELIVERY_RETENTION', '-1d'],
    ['DELIVERY_PARTITION_INTERVAL', '30s'], // partitions are named by the minute
    ['DELIVERY_PARTITIONS_AHEAD', 'a week'],
    ['DELIVERY_PARTITIONS_AHEAD', '30m'], // the hourly upkeep could leave a gap
    ['PORT', 'abc'],
    ['PORT', '70000'],
    ['DATABASE_URL', 'mysql://localhost/x'],
    ['REDIS_URL', 'localhost:6379'],
    ['NODE_ENV', 'staging'],
    ['WORKER_ENABLED', 'yes'],
    ['WORKER_CONCURRENCY', '0'],
    ['DELIVERY_TIMEOUT_MS', '1.5'],
    ['DELIVERY_RETRY_SCHEDULE', '5 seconds'],
    ['DELIVERY_RETRY_SCHEDULE_SHORT', '1m,5m,10m'], // not four delays
    ['DELIVERY_RETRY_SCHEDULE_SHORT', '1m,5m,15m,30m'], // 51m: the fifth attempt could fall past the hour
    ['WEBHOOK_ALLOW_PRIVATE_TARGETS', 'maybe'],
    ['SEED_DEMO', '1'],
    ['LOG_LEVEL', 'verbose'],
    ['QUEUE_PREFIX', 'has space'],
    ['QUEUE_PREFIX', '{half'],
    ['DATABASE_POOL_SIZE', '1'],
    ['DELIVERY_BREAKER_THRESHOLD', '-1'],
    ['HTTP_HEADERS_TIMEOUT_MS', '0'],
    ['HTTP_REQUEST_TIMEOUT_MS', '2h'],
    ['HTTP_KEEP_ALIVE_TIMEOUT_MS', '-5'],
    ['HTTP_HEADERS_TIMEOUT_MS', '40000'], // longer than the request's 30 s
    ['PORTAL_LINK_TTL', '1 hour'],
    ['PORTAL_LINK_TTL', '30s'], // shorter than a minute
    ['PORTAL_LINK_TTL', '31d'],
    ['PORTAL_FRAME_ANCESTORS', 'https://a.example.com; script-src *'],
    ['PORTAL_FRAME_ANCESTORS', 'https://a.example.com/path'],
    ['PORTAL_FRAME_ANCESTORS', '*'],
  ])('stops on a bad %s (%s) with a message naming it', (name, value) => {
    expect(() => loadConfig({ [name]: value })).toThrow(ConfigError);
    expect(() => loadConfig({ [name]: value })).toThrow(new RegExp(`\\b${name}\\b`));
  });

  it('lasts portal links 1 h at most and lets no page frame the console by default', () => {
    expect(loadConfig({})).toMatchObject({ portalLinkTtlMs: 3_600_000, portalFrameAncestors: [] });
    expect(
      loadConfig({
        PORTAL_LINK_TTL: '15m',
        PORTAL_FRAME_ANCESTORS: " https://app.example.com  'self' http://*.b.test:8080 ",
      }),
    ).toMatchObject({
      portalLinkTtlMs: 900_000,
      portalFrameAncestors: ['https://app.example.com', "'self'", 'http://*.b.test:8080'],
    });
  });

  it('takes a queue prefix in braces, a Redis Cluster hash tag', () => {
    expect(loadConfig({ QUEUE_PREFIX: '{cw}' }).queuePrefix).toBe('{cw}');
  });

  it("reads a Redis Cluster's nodes and the queue shards (one Redis and one queue by default)", () => {
    expect(loadConfig({})).toMatchObject({ redisClusterNodes: null, queueShards: 1 });
    expect(loadConfig({ REDIS_CLUSTER_NODES: '10.0.0.1:7000,redis-b:7001', QUEUE_SHARDS: '16' })).toMatchObject({
      redisClusterNodes: [
        { host: '10.0.0.1', port: 7000 },
        { host: 'redis-b', port: 7001 },
      ],
      queueShards: 16,
    });
    expect(() => loadConfig({ REDIS_CLUSTER_NODES: '10.0.0.1' })).toThrow(
      /REDIS_CLUSTER_NODES: must be comma-separated host:port/,
    );
    expect(() => loadConfig({ REDIS_CLUSTER_NODES: 'a:70000' })).toThrow(/REDIS_CLUSTER_NODES: each port/);
    expect(() => loadConfig({ QUEUE_SHARDS: '0' })).toThrow(/QUEUE_SHARDS: must be an integer from 1 to 1024/);
  });

  it('refuses a prefix in braces with shards or a cluster: each queue takes its own hash tag', () => {
    expect(() => loadConfig({ QUEUE_PREFIX: '{cw}', QUEUE_SHARDS: '4' })).toThrow(
      /QUEUE_PREFIX: must not be in braces/,
    );
    expect(() => loadConfig({ QUEUE_PREFIX: '{cw}', REDIS_CLUSTER_NODES: 'h:7000' })).toThrow(/QUEUE_PREFIX/);
    expect(loadConfig({ QUEUE_PREFIX: 'cw', REDIS_CLUSTER_NODES: 'h:7000' }).queuePrefix).toBe('cw');
  });

  it('sizes the Postgres pool on its own, not from the worker concurrency', () => {
    const config = loadConfig({ WORKER_CONCURRENCY: '2000' });
    expect(config.workerConcurrency).toBe(2000);
    expect(config.databasePoolSize).toBe(10);
  });

  it('traces only with an OTLP endpoint, and not when OTEL_SDK_DISABLED=true', () => {
    expect(loadConfig({}).tracing).toBeNull();
    const endpoint = 'http://jaeger:4318';
    expect(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: endpoint }).tracing).toEqual({ endpoint, sampleRatio: 1 });
    expect(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_SDK_DISABLED: 'true' }).tracing).toBeNull();
    expect(() => loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'jaeger:4318' })).toThrow(
      /OTEL_EXPORTER_OTLP_ENDPOINT: must be/,
    );
    expect(() => loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_SDK_DISABLED: 'yes' })).toThrow(
      /OTEL_SDK_DISABLED: must be true or false/,
    );
  });

  it('records the share of traces OTEL_TRACES_SAMPLER_ARG says with parentbased_traceidratio, else all', () => {
    const endpoint = 'http://jaeger:4318';
    const ratioOf = (env: Record<string, string>) =>
      loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, ...env }).tracing?.sampleRatio;
    expect(ratioOf({ OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.01' })).toBe(0.01);
    expect(ratioOf({ OTEL_TRACES_SAMPLER: 'parentbased_traceidratio' })).toBe(1);
    expect(ratioOf({ OTEL_TRACES_SAMPLER: 'parentbased_always_on', OTEL_TRACES_SAMPLER_ARG: '0.01' })).toBe(1);
    expect(() => ratioOf({ OTEL_TRACES_SAMPLER: 'always_off' })).toThrow(/OTEL_TRACES_SAMPLER: must be/);
    expect(() => ratioOf({ OTEL_TRACES_SAMPLER_ARG: '1.5' })).toThrow(/OTEL_TRACES_SAMPLER_ARG: must be a ratio/);
  });

  it('names every bad variable at once', () => {
    expect(() => loadConfig({ PORT: 'x', LOG_LEVEL: 'y' })).toThrow(/PORT[\s\S]*LOG_LEVEL|LOG_LEVEL[\s\S]*PORT/);
  });
});
