import { plainToInstance, Transform } from 'class-transformer';
import { IsBoolean, IsIn, IsInt, IsString, Matches, Max, Min, validateSync } from 'class-validator';

const bool = ({ value }: { value: unknown }) => (value === 'true' ? true : value === 'false' ? false : value);
const int = ({ value }: { value: unknown }) =>
  typeof value === 'string' && /^-?\d+$/.test(value) ? Number(value) : value;

const DURATION = /^\s*\d+(ms|s|m|h|d)?\s*$/;
const DURATION_MESSAGE = 'must be a duration such as 30d, 12h, 90m (units ms, s, m, h, d; no unit = ms)';

/** One rule, one message: `PORT=abc` is told the range, not three contradictory checks. */
function IntRange(min: number, max: number): PropertyDecorator {
  const message = `must be an integer from ${min} to ${max}`;
  return (target, key) => {
    for (const rule of [IsInt({ message }), Min(min, { message }), Max(max, { message })]) rule(target, key);
  };
}

/** Environment variables, with the defaults that make a local run work with no `.env`. */
export class EnvironmentVariables {
  @IsIn(['development', 'test', 'production'])
  NODE_ENV: 'development' | 'test' | 'production' = 'development';

  @Matches(/^postgres(ql)?:\/\/.+\/[^/?]+/, { message: 'must be a postgres:// URL with a database name' })
  DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/calc_webhooks';

  @Matches(/^rediss?:\/\/.+/, { message: 'must be a redis:// URL' })
  REDIS_URL = 'redis://127.0.0.1:6379';

  // Braces make the prefix a Redis Cluster hash tag: every key of the queue then lives in one slot.
  @Matches(/^(\{[A-Za-z0-9_-]{1,62}\}|[A-Za-z0-9_-]{1,64})$/, {
    message: 'must be 1-64 letters, digits, _ or -, optionally in braces (a Redis Cluster hash tag)',
  })
  QUEUE_PREFIX = 'cw';

  // A Redis Cluster instead of REDIS_URL: some of its nodes, comma-separated host:port (DESIGN 9).
  @Matches(/^$|^[^\s,:]+:\d{1,5}(,[^\s,:]+:\d{1,5})*$/, {
    message: 'must be comma-separated host:port pairs, such as 10.0.0.1:6379,10.0.0.2:6379',
  })
  REDIS_CLUSTER_NODES = '';

  // Delivery queues, each with its own hash tag; a delivery's is chosen by its host (DESIGN 9).
  @Transform(int)
  @IntRange(1, 1024)
  QUEUE_SHARDS = 1;

  @Transform(int)
  @IntRange(0, 65535)
  PORT = 3000;

  @Transform(int)
  @IntRange(100, 600000)
  HTTP_HEADERS_TIMEOUT_MS = 10000;

  @Transform(int)
  @IntRange(100, 3600000)
  HTTP_REQUEST_TIMEOUT_MS = 30000;

  @Transform(int)
  @IntRange(100, 600000)
  HTTP_KEEP_ALIVE_TIMEOUT_MS = 5000;

  @Transform(bool)
  @IsBoolean()
  MIGRATIONS_RUN = true;

  @Transform(bool)
  @IsBoolean()
  WORKER_ENABLED = true;

  @Transform(int)
  @IntRange(1, 10000)
  WORKER_CONCURRENCY = 500;

  @Transform(int)
  @IntRange(2, 1000)
  DATABASE_POOL_SIZE = 10;

  @Transform(int)
  @IntRange(0, 3600000)
  DATABASE_STATEMENT_TIMEOUT_MS = 5000;

  @Transform(int)
  @IntRange(0, 3600000)
  DATABASE_LOCK_TIMEOUT_MS = 2000;

  @Transform(int)
  @IntRange(0, 1000)
  DELIVERY_BREAKER_THRESHOLD = 5;

  @Transform(int)
  @IntRange(100, 3600000)
  DELIVERY_BREAKER_COOLDOWN_MS = 30000;

  @Transform(int)
  @IntRange(100, 120000)
  DELIVERY_TIMEOUT_MS = 15000;

  @Matches(/^\s*\d+(ms|s|m|h|d)?\s*(,\s*\d+(ms|s|m|h|d)?\s*)*$/, {
    message: 'must be a comma-separated list of delays such as 5s,5m,30m,2h (units ms, s, m, h, d)',
  })
  DELIVERY_RETRY_SCHEDULE = '5s,5m,30m,2h,5h,10h,10h';

  @Matches(/^\s*\d+(ms|s|m|h|d)?\s*(,\s*\d+(ms|s|m|h|d)?\s*){3}$/, {
    message: 'must be four comma-separated delays such as 30s,2m,10m,30m (units ms, s, m, h, d)',
  })
  DELIVERY_RETRY_SCHEDULE_SHORT = '30s,2m,10m,30m';

  @Transform(int)
  @IntRange(50, 3600000)
  SWEEP_INTERVAL_MS = 30000;

  @Transform(int)
  @IntRange(1000, 600000)
  DELIVERY_LOCK_MS = 30000;

  @Transform(int)
  @IntRange(0, 10000)
  DELIVERY_MAX_IN_FLIGHT_PER_WEBHOOK = 20;

  @Transform(int)
  @IntRange(1, 100000)
  DELIVERY_HOST_INITIAL_LIMIT = 20;

  @Transform(int)
  @IntRange(1, 100000)
  DELIVERY_HOST_MIN_LIMIT = 1;

  @Transform(int)
  @IntRange(1, 100000)
  DELIVERY_HOST_MAX_LIMIT = 1000;

  @IsString()
  WEBHOOK_ALLOW_PRIVATE_TARGETS = '';

  @Matches(DURATION, { message: DURATION_MESSAGE })
  WEBHOOK_DISABLE_AFTER = '5d';

  @Transform(int)
  @IntRange(1, 1000000)
  WEBHOOK_DISABLE_MIN_FAILURES = 10;

  @Matches(DURATION, { message: DURATION_MESSAGE })
  DELIVERY_RETENTION = '30d';

  // The time slot of each partition of deliveries and their attempts (a week: a generic plan locks every
  // partition, so few of them), and how far ahead they exist (DESIGN 9).
  @Matches(DURATION, { message: DURATION_MESSAGE })
  DELIVERY_PARTITION_INTERVAL = '7d';

  @Matches(DURATION, { message: DURATION_MESSAGE })
  DELIVERY_PARTITIONS_AHEAD = '7d';

  @Matches(DURATION, { message: DURATION_MESSAGE })
  AUDIT_RETENTION = '365d';

  @Matches(DURATION, { message: DURATION_MESSAGE })
  PORTAL_LINK_TTL = '1h';

  // Who may frame the console (CSP frame-ancestors): origins or 'self', space-separated; empty = nobody.
  @Matches(/^\s*((https?:\/\/(\*\.)?[A-Za-z0-9.-]+(:\d{1,5})?|'self')(\s+|$))*$/, {
    message: "must be space-separated origins such as https://app.example.com or 'self' (no path, no ;)",
  })
  PORTAL_FRAME_ANCESTORS = '';

  @Transform(int)
  @IntRange(1, 100000)
  MAX_WEBHOOKS_PER_WORKSPACE = 100;

  @IsString()
  SEED_DEMO = '';

  @IsIn(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
  LOG_LEVEL = 'info';

  @Transform(int)
  @IntRange(0, 65535)
  METRICS_PORT = 9464;

  @Matches(/^[^:]*$/, { message: 'must not contain a colon' })
  ADMIN_USER = '';

  @IsString()
  ADMIN_PASSWORD = '';

  @Transform(int)
  @IntRange(0, 1000000)
  RATE_LIMIT_PER_MINUTE = 600;

  @Transform(int)
  @IntRange(0, 100000)
  RATE_LIMIT_PER_SECOND = 0;

  @Transform(int)
  @IsInt()
  @Min(0)
  @Max(1000000)
  RATE_LIMIT_PER_IP_PER_MINUTE = 1200;

  // The OTLP/HTTP collector's base URL (the exporter adds /v1/traces); empty = no tracing.
  @Matches(/^(https?:\/\/\S+)?$/, { message: 'must be an http:// or https:// URL, or empty (no tracing)' })
  OTEL_EXPORTER_OTLP_ENDPOINT = '';

  @IsString()
  OTEL_SDK_DISABLED = '';

  // The standard sampler variables, of which the two parent-based samplers: a worker follows the api's choice.
  @IsIn(['', 'parentbased_always_on', 'parentbased_traceidratio'], {
    message: 'must be parentbased_always_on or parentbased_traceidratio',
  })
  OTEL_TRACES_SAMPLER = '';

  @Matches(/^(0(\.\d+)?|1(\.0+)?)?$/, { message: 'must be a ratio from 0 to 1, such as 0.01' })
  OTEL_TRACES_SAMPLER_ARG = '';
}

export interface AppConfig {
  env: EnvironmentVariables['NODE_ENV'];
  databaseUrl: string;
  redisUrl: string;
  /** A Redis Cluster's seed nodes instead of redisUrl; null: one Redis. */
  redisClusterNodes: { host: string; port: number }[] | null;
  queuePrefix: string;
  queueShards: number;
  port: number;
  /**
   * The api server's limits on a client (DESIGN 3, slow clients): all headers within `headersMs`, the whole
   * request within `requestMs` (408 otherwise), and an idle kept-alive connection closed after `keepAliveMs`.
   */
  httpTimeouts: { headersMs: number; requestMs: number; keepAliveMs: number };
  migrationsRun: boolean;
  workerEnabled: boolean;
  workerConcurrency: number;
  /** Connections in this process's Postgres pool; no longer grows with the worker's concurrency. */
  databasePoolSize: number;
  /** Postgres cancels a statement running longer, or waiting for a lock longer (0 = no limit): the request answers 503. */
  databaseTimeouts: { statementMs: number; lockMs: number };
  /** Consecutive timeouts after which a destination is paused (0 = no circuit breaker), and for how long. */
  breaker: { threshold: number; cooldownMs: number };
  deliveryTimeoutMs: number;
  /** Delays in ms before attempt 2, 3, ...; attempts in all = length + 1. */
  retryScheduleMs: number[];
  /** The `short` schedule a webhook may choose (DESIGN 10): four delays, five attempts within an hour. */
  shortRetryScheduleMs: number[];
  sweepIntervalMs: number;
  /** How long a worker's claim on a job lasts without renewal; a killed worker's jobs return after it. */
  deliveryLockMs: number;
  /** Attempts in flight for one webhook across all workers; 0 = no cap. */
  maxInFlightPerWebhook: number;
  /** The adaptive limit of attempts in flight to one host:port across all workers: where it starts, its bounds. */
  hostLimit: { initial: number; min: number; max: number };
  allowPrivateTargets: boolean;
  /**
   * Automatic disabling of a failing webhook (DESIGN 7.1): disabled when a failed attempt makes the streak
   * reach `minFailures` while the streak's first failure is older than `afterMs`; afterMs 0 = never.
   */
  webhookDisable: { afterMs: number; minFailures: number };
  /** Ended deliveries (with their attempts) and ended recoveries older than this are deleted (DESIGN 7.7). */
  deliveryRetentionMs: number;
  /**
   * deliveries and delivery_attempts are partitioned by the delivery's created_at, one partition per
   * `intervalMs`, created `aheadMs` ahead of time (DESIGN 9).
   */
  deliveryPartitions: { intervalMs: number; aheadMs: number };
  /** How long audit events are kept (AUDIT_RETENTION, DESIGN 10). */
  auditRetentionMs: number;
  /** The longest a portal link, and the console session it opens, lasts (PORTAL_LINK_TTL, DESIGN 10). */
  portalLinkTtlMs: number;
  /** Sources allowed to frame the console (CSP frame-ancestors); empty = none. */
  portalFrameAncestors: string[];
  maxWebhooksPerWorkspace: number;
  seedDemo: boolean;
  logLevel: string;
  /** Port of this process's /metrics server (api and worker alike, never PORT); 0 = off. */
  metricsPort: number;
  /** Basic-auth credentials of the queue dashboard at /admin/queues; null = dashboard off. */
  adminCredentials: { user: string; password: string } | null;
  /** Requests per API key, and per client IP before authentication, counted in Redis across replicas; 0 = off. */
  rateLimit: { perMinute: number; perSecond: number; perIpPerMinute: number };
  /**
   * OpenTelemetry traces exported over OTLP/HTTP to `endpoint` (DESIGN 9), of which `sampleRatio` of the
   * traces started here are recorded (1 = all); null = off, the SDK not loaded.
   */
  tracing: { endpoint: string; sampleRatio: number } | null;
}

export class ConfigError extends Error {}

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60000, h: 3600000, d: 86400000 };

/** `30d`, `12h`, `90m`, `5s`, `250ms` or a bare number of ms. */
export function parseDuration(value: string): number {
  const [, n, unit] = /^\s*(\d+)(ms|s|m|h|d)?\s*$/.exec(value)!;
  return Number(n) * UNIT_MS[unit ?? 'ms'];
}

export function parseDurationList(value: string): number[] {
  return value.split(',').map(parseDuration);
}

// With +20% jitter on each delay, the fifth attempt still starts within the hour.
const SHORT_SCHEDULE_MAX_MS = 50 * 60_000;

function shortSchedule(value: string): number[] {
  const delays = parseDurationList(value);
  if (delays.reduce((a, b) => a + b, 0) > SHORT_SCHEDULE_MAX_MS) {
    throw new ConfigError(
      'DELIVERY_RETRY_SCHEDULE_SHORT: its delays must add up to at most 50m (5 attempts within an hour)',
    );
  }
  return delays;
}

function optionalBool(name: string, value: string, fallback: boolean): boolean {
  if (value === '') return fallback;
  if (value === 'true' || value === 'false') return value === 'true';
  throw new ConfigError(`${name}: must be true or false`);
}

function adminCredentials(user: string, password: string): AppConfig['adminCredentials'] {
  if (user === '' && password === '') return null;
  if (user === '' || password === '') {
    throw new ConfigError(`${user === '' ? 'ADMIN_USER' : 'ADMIN_PASSWORD'}: must be set together with the other`);
  }
  return { user, password };
}

function clusterNodes(list: string): AppConfig['redisClusterNodes'] {
  if (list === '') return null;
  return list.split(',').map((node) => {
    const at = node.lastIndexOf(':');
    const port = Number(node.slice(at + 1));
    if (port < 1 || port > 65535) throw new ConfigError('REDIS_CLUSTER_NODES: each port must be from 1 to 65535');
    return { host: node.slice(0, at), port };
  });
}

/** With shards or a cluster the service tags each queue itself; a tag in the prefix would put them all in one slot. */
function queuePrefix(env: EnvironmentVariables): string {
  const tagged = env.REDIS_CLUSTER_NODES !== '' || env.QUEUE_SHARDS > 1;
  if (tagged && env.QUEUE_PREFIX.startsWith('{')) {
    throw new ConfigError(
      'QUEUE_PREFIX: must not be in braces with REDIS_CLUSTER_NODES or QUEUE_SHARDS above 1 (each queue gets its own hash tag)',
    );
  }
  return env.QUEUE_PREFIX;
}

function hostLimit(initial: number, min: number, max: number): AppConfig['hostLimit'] {
  if (min > max) throw new ConfigError('DELIVERY_HOST_MIN_LIMIT: must not be above DELIVERY_HOST_MAX_LIMIT');
  // The default start (20) follows bounds set below or above it.
  return { initial: Math.min(max, Math.max(min, initial)), min, max };
}

function portalLinkTtl(value: string): number {
  const ms = parseDuration(value);
  if (ms < 60_000 || ms > 30 * 86_400_000) throw new ConfigError('PORTAL_LINK_TTL: must be from 1m to 30d');
  return ms;
}

function deliveryPartitions(interval: string, ahead: string): AppConfig['deliveryPartitions'] {
  const intervalMs = parseDuration(interval);
  // A partition is named after the minute it starts.
  if (intervalMs < 60_000) throw new ConfigError('DELIVERY_PARTITION_INTERVAL: must be at least 1m');
  // Less would leave a submission without a partition whenever one run of the upkeep job is late.
  const aheadMs = parseDuration(ahead);
  if (aheadMs < 3_600_000) throw new ConfigError('DELIVERY_PARTITIONS_AHEAD: must be at least 1h');
  return { intervalMs, aheadMs };
}

function tracing(env: EnvironmentVariables): AppConfig['tracing'] {
  if (env.OTEL_EXPORTER_OTLP_ENDPOINT === '' || optionalBool('OTEL_SDK_DISABLED', env.OTEL_SDK_DISABLED, false)) {
    return null;
  }
  // As the specification says: the ratio applies to traceidratio only, and defaults to 1.
  const ratio = env.OTEL_TRACES_SAMPLER === 'parentbased_traceidratio' && env.OTEL_TRACES_SAMPLER_ARG !== '';
  return { endpoint: env.OTEL_EXPORTER_OTLP_ENDPOINT, sampleRatio: ratio ? Number(env.OTEL_TRACES_SAMPLER_ARG) : 1 };
}

/** Reads and validates the environment; throws a ConfigError naming every bad variable. */
export function loadConfig(source: NodeJS.ProcessEnv = process.env): AppConfig {
  const known = Object.keys(new EnvironmentVariables());
  const present = Object.fromEntries(
    known.filter((k) => source[k] !== undefined && source[k] !== '').map((k) => [k, source[k]]),
  );
  const env = plainToInstance(EnvironmentVariables, present);
  const errors = validateSync(env, { skipMissingProperties: false, stopAtFirstError: true });
  if (errors.length > 0) {
    const lines = errors.map((e) => `${e.property}: ${Object.values(e.constraints ?? {}).join('; ')}`);
    throw new ConfigError(`Invalid configuration:\n  ${lines.join('\n  ')}`);
  }
  if (env.HTTP_HEADERS_TIMEOUT_MS > env.HTTP_REQUEST_TIMEOUT_MS) {
    // Node refuses this pair at createServer: the headers are part of the request.
    throw new ConfigError('HTTP_HEADERS_TIMEOUT_MS: must not be greater than HTTP_REQUEST_TIMEOUT_MS');
  }
  const devLike = env.NODE_ENV !== 'production';
  return {
    env: env.NODE_ENV,
    databaseUrl: env.DATABASE_URL,
    redisUrl: env.REDIS_URL,
    redisClusterNodes: clusterNodes(env.REDIS_CLUSTER_NODES),
    queuePrefix: queuePrefix(env),
    queueShards: env.QUEUE_SHARDS,
    port: env.PORT,
    httpTimeouts: {
      headersMs: env.HTTP_HEADERS_TIMEOUT_MS,
      requestMs: env.HTTP_REQUEST_TIMEOUT_MS,
      keepAliveMs: env.HTTP_KEEP_ALIVE_TIMEOUT_MS,
    },
    migrationsRun: env.MIGRATIONS_RUN,
    workerEnabled: env.WORKER_ENABLED,
    workerConcurrency: env.WORKER_CONCURRENCY,
    databasePoolSize: env.DATABASE_POOL_SIZE,
    databaseTimeouts: { statementMs: env.DATABASE_STATEMENT_TIMEOUT_MS, lockMs: env.DATABASE_LOCK_TIMEOUT_MS },
    breaker: { threshold: env.DELIVERY_BREAKER_THRESHOLD, cooldownMs: env.DELIVERY_BREAKER_COOLDOWN_MS },
    deliveryTimeoutMs: env.DELIVERY_TIMEOUT_MS,
    retryScheduleMs: parseDurationList(env.DELIVERY_RETRY_SCHEDULE),
    shortRetryScheduleMs: shortSchedule(env.DELIVERY_RETRY_SCHEDULE_SHORT),
    sweepIntervalMs: env.SWEEP_INTERVAL_MS,
    deliveryLockMs: env.DELIVERY_LOCK_MS,
    maxInFlightPerWebhook: env.DELIVERY_MAX_IN_FLIGHT_PER_WEBHOOK,
    hostLimit: hostLimit(env.DELIVERY_HOST_INITIAL_LIMIT, env.DELIVERY_HOST_MIN_LIMIT, env.DELIVERY_HOST_MAX_LIMIT),
    allowPrivateTargets: optionalBool('WEBHOOK_ALLOW_PRIVATE_TARGETS', env.WEBHOOK_ALLOW_PRIVATE_TARGETS, devLike),
    webhookDisable: {
      afterMs: parseDuration(env.WEBHOOK_DISABLE_AFTER),
      minFailures: env.WEBHOOK_DISABLE_MIN_FAILURES,
    },
    deliveryRetentionMs: parseDuration(env.DELIVERY_RETENTION),
    deliveryPartitions: deliveryPartitions(env.DELIVERY_PARTITION_INTERVAL, env.DELIVERY_PARTITIONS_AHEAD),
    auditRetentionMs: parseDuration(env.AUDIT_RETENTION),
    portalLinkTtlMs: portalLinkTtl(env.PORTAL_LINK_TTL),
    portalFrameAncestors: env.PORTAL_FRAME_ANCESTORS.split(/\s+/).filter(Boolean),
    maxWebhooksPerWorkspace: env.MAX_WEBHOOKS_PER_WORKSPACE,
    seedDemo: optionalBool('SEED_DEMO', env.SEED_DEMO, env.NODE_ENV === 'development'),
    logLevel: env.LOG_LEVEL,
    metricsPort: env.METRICS_PORT,
    adminCredentials: adminCredentials(env.ADMIN_USER, env.ADMIN_PASSWORD),
    rateLimit: {
      perMinute: env.RATE_LIMIT_PER_MINUTE,
      perSecond: env.RATE_LIMIT_PER_SECOND,
      perIpPerMinute: env.RATE_LIMIT_PER_IP_PER_MINUTE,
    },
    tracing: tracing(env),
  };
}
