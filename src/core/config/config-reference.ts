import { getMetadataStorage } from 'class-validator';
import { EnvironmentVariables } from './config.js';

type Variable = keyof EnvironmentVariables;

interface VariableDoc {
  section: Section;
  /** What the value counts in: `ms`, `duration` (ms, s, m, h, d), `count`, `boolean`, `URL`, ... */
  unit: string;
  /** One line: what the variable does, for an operator. */
  meaning: string;
  /** What an empty value (the default) means, when it is not simply "none". */
  empty?: string;
}

type Section = (typeof SECTIONS)[number];
const SECTIONS = [
  'Connections',
  'Processes',
  'HTTP API',
  'Delivery',
  'Admission',
  'Retention',
  'Portal links',
  'Tracing',
] as const;

/**
 * Every environment variable's unit and meaning; the default and the accepted range are read from
 * EnvironmentVariables. A Record, so a variable added there does not compile until it is described here.
 * `npm run docs:config` writes docs/configuration.md and .env.example from it.
 */
const VARIABLES: Record<Variable, VariableDoc> = {
  DATABASE_URL: {
    section: 'Connections',
    unit: 'URL',
    meaning: 'Postgres connection; the database is created at start when missing',
  },
  REDIS_URL: {
    section: 'Connections',
    unit: 'URL',
    meaning: 'Redis for wakes, admission state and rate limits (Postgres is the source of truth)',
  },
  REDIS_CLUSTER_NODES: {
    section: 'Connections',
    unit: 'host:port list',
    meaning: 'a Redis Cluster instead of REDIS_URL: some of its nodes, comma-separated (docs/scaling.md)',
    empty: 'REDIS_URL',
  },
  QUEUE_PREFIX: {
    section: 'Connections',
    unit: 'name',
    meaning: "prefix of the queues' Redis keys, so installs can share a Redis; no braces with shards or a cluster",
  },
  QUEUE_SHARDS: {
    section: 'Connections',
    unit: 'count',
    meaning:
      "queues, a destination host's chosen by a hash of the host; each has its own hash tag (e.g. 16 on a cluster)",
  },
  DATABASE_POOL_SIZE: {
    section: 'Connections',
    unit: 'count',
    meaning:
      'Postgres connections of one process, all opened at start and kept; it does not grow with WORKER_CONCURRENCY',
  },
  DATABASE_STATEMENT_TIMEOUT_MS: {
    section: 'Connections',
    unit: 'ms',
    meaning: 'Postgres cancels a longer statement (0 = no limit): the request answers 503, a worker retries',
  },
  DATABASE_LOCK_TIMEOUT_MS: {
    section: 'Connections',
    unit: 'ms',
    meaning: 'the same for a statement waiting for a lock (0 = no limit)',
  },
  NODE_ENV: {
    section: 'Processes',
    unit: 'name',
    meaning:
      'production: no demo seed, SSRF guard on; sets the defaults of SEED_DEMO and WEBHOOK_ALLOW_PRIVATE_TARGETS',
  },
  PORT: { section: 'Processes', unit: 'port', meaning: 'HTTP port of the api' },
  METRICS_PORT: {
    section: 'Processes',
    unit: 'port',
    meaning:
      "port of the process's GET /metrics (api and worker alike, never PORT); 0 = off; one per process on a host",
  },
  MIGRATIONS_RUN: {
    section: 'Processes',
    unit: 'boolean',
    meaning: 'the api and the CLI apply pending migrations at start; false when a migrate step runs them',
  },
  WORKER_ENABLED: {
    section: 'Processes',
    unit: 'boolean',
    meaning: 'run the delivery worker inside the api process; false when separate workers run',
  },
  WORKER_CONCURRENCY: {
    section: 'Processes',
    unit: 'count',
    meaning: 'delivery attempts one worker process keeps in flight (in flight = rate x receiver latency)',
  },
  SEED_DEMO: {
    section: 'Processes',
    unit: 'boolean',
    meaning: 'create the demo workspace, calculators and documented key at start; refused in production',
    empty: 'true only when NODE_ENV=development',
  },
  LOG_LEVEL: { section: 'Processes', unit: 'name', meaning: 'level of the JSON logs' },
  HTTP_HEADERS_TIMEOUT_MS: {
    section: 'HTTP API',
    unit: 'ms',
    meaning: 'a client must send its request line and headers within this, or gets 408 (slowloris)',
  },
  HTTP_REQUEST_TIMEOUT_MS: {
    section: 'HTTP API',
    unit: 'ms',
    meaning: 'the same for the whole request, body included; at least HTTP_HEADERS_TIMEOUT_MS',
  },
  HTTP_KEEP_ALIVE_TIMEOUT_MS: {
    section: 'HTTP API',
    unit: 'ms',
    meaning: 'an idle kept-alive connection is closed after this; behind a load balancer, above its idle timeout',
  },
  RATE_LIMIT_PER_MINUTE: {
    section: 'HTTP API',
    unit: 'count',
    meaning: 'requests per API key per minute, counted in Redis across replicas; 0 = off',
  },
  RATE_LIMIT_PER_SECOND: {
    section: 'HTTP API',
    unit: 'count',
    meaning: 'requests per API key per second; 0 = off',
  },
  RATE_LIMIT_PER_IP_PER_MINUTE: {
    section: 'HTTP API',
    unit: 'count',
    meaning: 'requests per client IP per minute, counted before authentication; probes never limited; 0 = off',
  },
  ADMIN_USER: {
    section: 'HTTP API',
    unit: 'name',
    meaning: 'with ADMIN_PASSWORD: the queue dashboard at /admin/queues behind basic auth',
    empty: 'no dashboard (404)',
  },
  ADMIN_PASSWORD: {
    section: 'HTTP API',
    unit: 'secret',
    meaning: "the dashboard's password; set both or neither",
    empty: 'no dashboard (404)',
  },
  DELIVERY_TIMEOUT_MS: {
    section: 'Delivery',
    unit: 'ms',
    meaning: 'time limit of one delivery attempt, unless the webhook sets its own timeoutMs',
  },
  DELIVERY_RETRY_SCHEDULE: {
    section: 'Delivery',
    unit: 'duration list',
    meaning: 'delays before each retry, each with +-20% jitter; attempts in all = entries + 1',
  },
  DELIVERY_RETRY_SCHEDULE_SHORT: {
    section: 'Delivery',
    unit: 'duration list',
    meaning: 'the `short` schedule a webhook may choose: four delays adding up to at most 50m',
  },
  SWEEP_INTERVAL_MS: {
    section: 'Delivery',
    unit: 'ms',
    meaning: 'how often the sweeper looks for due deliveries that Redis lost track of, and retention runs',
  },
  DELIVERY_LOCK_MS: {
    section: 'Delivery',
    unit: 'ms',
    meaning: "how long a worker's claim lasts without renewal: a killed worker's work is resumed after it",
  },
  WEBHOOK_ALLOW_PRIVATE_TARGETS: {
    section: 'Delivery',
    unit: 'boolean',
    meaning:
      'true turns the SSRF guard off, so webhooks may target private and loopback addresses (never in production)',
    empty: 'true unless NODE_ENV=production',
  },
  MAX_WEBHOOKS_PER_WORKSPACE: {
    section: 'Delivery',
    unit: 'count',
    meaning: 'active webhooks one workspace may have',
  },
  WEBHOOK_DISABLE_AFTER: {
    section: 'Delivery',
    unit: 'duration',
    meaning: 'a webhook failing for longer than this (and WEBHOOK_DISABLE_MIN_FAILURES times) is disabled; 0 = never',
  },
  WEBHOOK_DISABLE_MIN_FAILURES: {
    section: 'Delivery',
    unit: 'count',
    meaning: 'consecutive failed attempts a webhook needs before it is disabled for failing',
  },
  DELIVERY_MAX_IN_FLIGHT_PER_WEBHOOK: {
    section: 'Admission',
    unit: 'count',
    meaning: 'attempts in flight for one webhook across all workers, unless it sets maxInFlight; 0 = no cap',
  },
  DELIVERY_HOST_INITIAL_LIMIT: {
    section: 'Admission',
    unit: 'count',
    meaning: "where a host's adaptive limit of attempts in flight, shared by all workers, starts",
  },
  DELIVERY_HOST_MIN_LIMIT: {
    section: 'Admission',
    unit: 'count',
    meaning: 'the least it is cut to (429, 503, refused or reset connections, timeouts, rising latency)',
  },
  DELIVERY_HOST_MAX_LIMIT: {
    section: 'Admission',
    unit: 'count',
    meaning: 'the most it grows to (2xx at steady latency)',
  },
  DELIVERY_BREAKER_THRESHOLD: {
    section: 'Admission',
    unit: 'count',
    meaning: 'consecutive timed-out attempts after which a host is paused; 0 = no circuit breaker',
  },
  DELIVERY_BREAKER_COOLDOWN_MS: {
    section: 'Admission',
    unit: 'ms',
    meaning: 'how long a paused host waits for its probe attempt; a failed probe doubles it (up to 32x)',
  },
  DELIVERY_RETENTION: {
    section: 'Retention',
    unit: 'duration',
    meaning: 'deliveries and attempts are dropped a partition at a time once all of it ended longer ago',
  },
  DELIVERY_PARTITION_INTERVAL: {
    section: 'Retention',
    unit: 'duration',
    meaning: 'time slot of each partition of deliveries and delivery_attempts (at least 1m)',
  },
  DELIVERY_PARTITIONS_AHEAD: {
    section: 'Retention',
    unit: 'duration',
    meaning: 'how far ahead an hourly job creates those partitions (at least 1h)',
  },
  AUDIT_RETENTION: {
    section: 'Retention',
    unit: 'duration',
    meaning: 'how long the audit log keeps a change, and an expired portal link is kept',
  },
  PORTAL_LINK_TTL: {
    section: 'Portal links',
    unit: 'duration',
    meaning: 'the longest a portal link, and the console session it opens, lasts (1m to 30d)',
  },
  PORTAL_FRAME_ANCESTORS: {
    section: 'Portal links',
    unit: 'origin list',
    meaning: "who may embed the console in an iframe: space-separated origins or 'self' (CSP frame-ancestors)",
    empty: 'no page may frame the console',
  },
  OTEL_EXPORTER_OTLP_ENDPOINT: {
    section: 'Tracing',
    unit: 'URL',
    meaning: 'base URL of an OTLP/HTTP collector (/v1/traces is added); the other standard OTEL_* apply once set',
    empty: 'no tracing, the SDK not loaded',
  },
  OTEL_SDK_DISABLED: {
    section: 'Tracing',
    unit: 'boolean',
    meaning: 'true keeps tracing off even with an endpoint set',
  },
  OTEL_TRACES_SAMPLER: {
    section: 'Tracing',
    unit: 'name',
    meaning: 'parentbased_traceidratio records OTEL_TRACES_SAMPLER_ARG of the traces started in a process',
    empty: 'every trace',
  },
  OTEL_TRACES_SAMPLER_ARG: {
    section: 'Tracing',
    unit: 'ratio',
    meaning: 'the share of traces recorded with parentbased_traceidratio, e.g. 0.01',
    empty: '1',
  },
};

/** The range or values the validation accepts, read from its decorators. */
function accepts(name: Variable): string {
  const rules = getMetadataStorage()
    .getTargetValidationMetadatas(EnvironmentVariables, '', true, false)
    .filter((rule) => rule.propertyName === name);
  const constraint = (rule: string) => rules.find((r) => r.name === rule)?.constraints?.[0] as unknown;
  const oneOf = constraint('isIn') as string[] | undefined;
  if (oneOf) return oneOf.filter(Boolean).join(', ');
  if (rules.some((r) => r.name === 'isBoolean')) return 'true, false';
  const min = constraint('min');
  const max = constraint('max');
  return min === undefined ? '' : `${String(min)} to ${String(max)}`;
}

interface Row {
  name: Variable;
  value: string;
  doc: VariableDoc;
  accepts: string;
}

function rows(): Row[] {
  const defaults = new EnvironmentVariables();
  return (Object.keys(VARIABLES) as Variable[]).map((name) => ({
    name,
    value: String(defaults[name]),
    doc: VARIABLES[name],
    accepts: accepts(name),
  }));
}

const inSection = (section: Section) => rows().filter((row) => row.doc.section === section);
const cell = (text: string) => text.replaceAll('|', '\\|');

export const CONFIG_DOC_FILES = { reference: 'docs/configuration.md', example: '.env.example' } as const;
const REGENERATE = 'Generated from src/core/config/config-reference.ts by `npm run docs:config`; do not edit.';

/** docs/configuration.md: every variable with its default, unit, accepted values and meaning. */
export function renderConfigReference(): string {
  const lines = [
    '# Configuration reference',
    '',
    'Every environment variable the processes read (api, worker, migrate, CLI), for whoever deploys the',
    'service. They are validated at start: a bad value stops the process with a message naming the',
    'variable (exit code 78). With Postgres and Redis on their standard local ports no variable is needed.',
    'The processes read only their environment; `.env.example` lists every variable at its default, and',
    '`node --env-file=.env dist/main.js` reads such a file. An empty value means the default.',
    '',
    'Units: `ms` milliseconds; `duration` a number with a unit `ms`, `s`, `m`, `h` or `d` (none = ms).',
    '',
    `<!-- ${REGENERATE} -->`,
  ];
  for (const section of SECTIONS) {
    lines.push('', `## ${section}`, '', '| Variable | Default | Unit | Accepts | Meaning |', '|---|---|---|---|---|');
    for (const row of inSection(section)) {
      const value = row.value === '' ? `empty: ${row.doc.empty ?? 'none'}` : `\`${row.value}\``;
      lines.push(
        `| \`${row.name}\` | ${cell(value)} | ${row.doc.unit} | ${cell(row.accepts)} | ${cell(row.doc.meaning)} |`,
      );
    }
  }
  return `${lines.join('\n')}\n`;
}

/** .env.example: every variable at its default, each under its meaning. */
export function renderEnvExample(): string {
  const lines = [
    '# Every setting the processes read, at its default: with Postgres and Redis on their standard local',
    '# ports no .env is needed. Copy to .env and run e.g. `node --env-file=.env dist/main.js`; an empty',
    '# value means the default. docs/configuration.md explains each.',
    `# ${REGENERATE}`,
  ];
  for (const section of SECTIONS) {
    lines.push('', `# --- ${section} ---`);
    for (const row of inSection(section)) {
      const details = [row.doc.unit, row.accepts, row.value === '' && row.doc.empty ? `empty: ${row.doc.empty}` : '']
        .filter(Boolean)
        .join('; ');
      lines.push(`# ${row.doc.meaning} (${details})`, `${row.name}=${row.value}`);
    }
  }
  return `${lines.join('\n')}\n`;
}
