import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { loadConfig } from '../../src/core/config/config.js';
import { RedisClients } from '../../src/core/redis/redis.module.js';
import { HostAdmission, type HostSignal } from '../../src/delivery/engine/admission/host-admission.js';
import { HostStates } from '../../src/delivery/host-state.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { TEST_REDIS_URL } from '../support/test-app.js';

// The rules of admission (src/delivery/engine/admission/admission.ts), each against a real Redis.

function useHosts(env: Record<string, string>) {
  const config = loadConfig({
    NODE_ENV: 'test',
    REDIS_URL: TEST_REDIS_URL,
    QUEUE_PREFIX: `cw_test_${randomBytes(6).toString('hex')}`,
    ...env,
  });
  const redis = new RedisClients(config);
  const host = new HostAdmission(config, redis);
  const states = new HostStates(config, redis);
  // Whatever the describe's tests left at its hosts (slots, lines, waiters, windows) expires by itself.
  afterAll(async () => {
    try {
      const client = redis.get('admission');
      const keys = await client.keys(`${config.queuePrefix}:dest:*`);
      const ttls = await Promise.all(keys.map((key) => client.pttl(key)));
      expect(keys.filter((_, i) => ttls[i] < 0)).toEqual([]);
    } finally {
      redis.onApplicationShutdown();
    }
  });
  /**
   * Enters attempt `id` (its job `job-<id>`) of `webhook` in `workspace`, under the webhook's cap (by default
   * DELIVERY_MAX_IN_FLIGHT_PER_WEBHOOK): 0 when admitted, else its wait's end.
   */
  const enter = async (
    destination: string,
    id: string,
    webhook = 'hook',
    workspace = 'ws',
    cap = config.maxInFlightPerWebhook,
  ) => {
    const [answer] = await host.enter({
      destination,
      holder: `${id}:t`,
      jobId: `job-${id}`,
      webhookId: webhook,
      workspaceId: workspace,
      cap,
    });
    return answer;
  };
  /** Ends attempt `id` (by default showing nothing of the host); returns the jobs given a turn. */
  const leave = async (
    destination: string,
    id: string,
    webhook = 'hook',
    signal: HostSignal = 'other',
    admittedAt = 0,
  ) => (await host.leave(destination, `${id}:t`, webhook, { signal, latencyMs: 10, admittedAt })).map((w) => w.jobId);
  return { config, host, states, enter, leave };
}

describe('admission: per webhook and per host', () => {
  const { host, states, enter, leave } = useHosts({
    DELIVERY_MAX_IN_FLIGHT_PER_WEBHOOK: '2',
    DELIVERY_HOST_INITIAL_LIMIT: '3',
  });

  it('admits at most DELIVERY_MAX_IN_FLIGHT_PER_WEBHOOK attempts of a webhook, and at most the limit at the host', async () => {
    expect(await enter('h1', 'a1', 'hook-a')).toBe(0);
    expect(await enter('h1', 'a2', 'hook-a')).toBe(0);
    expect(await enter('h1', 'a3', 'hook-a')).toBeGreaterThan(0);
    expect(await enter('h1', 'b1', 'hook-b')).toBe(0);
    expect(await enter('h1', 'c1', 'hook-c')).toBeGreaterThan(0);
    expect(await states.get('h1')).toMatchObject({ limit: 3, inFlight: 3 });
  });

  it('passes over a waiter whose webhook is at its cap, and gives it the turn when its own slot frees', async () => {
    // b's slot frees: a3 waited first, but hook-a is at its cap; c1 takes the turn.
    expect(await leave('h1', 'b1', 'hook-b')).toEqual(['job-c1']);
    expect(await leave('h1', 'a1', 'hook-a')).toEqual(['job-a3']);
  });

  it('holds a webhook to its own cap (its maxInFlight), above or below the default, waiters included', async () => {
    expect(await enter('h12', 'o1', 'hook-one', 'ws', 1)).toBe(0);
    expect(await enter('h12', 'o2', 'hook-one', 'ws', 1)).toBeGreaterThan(0);
    expect(await enter('h12', 't1', 'hook-three', 'ws', 3)).toBe(0);
    expect(await enter('h12', 't2', 'hook-three', 'ws', 3)).toBe(0);
    expect(await enter('h12', 't3', 'hook-three', 'ws', 3)).toBeGreaterThan(0); // the host's limit, 3
    // A slot of hook-three frees: o2 waited first but hook-one is at its cap of 1; t3 (cap 3) takes the turn.
    expect(await leave('h12', 't1', 'hook-three')).toEqual(['job-t3']);
    expect(await enter('h12', 't3', 'hook-three', 'ws', 3)).toBe(0);
    // hook-one's own slot frees: its waiter's turn, under the cap its attempt brought.
    expect(await leave('h12', 'o1', 'hook-one')).toEqual(['job-o2']);
  });

  it('lets a slot belong to one attempt: another lock token of the same delivery neither takes nor frees it', async () => {
    expect(await enter('h1', 'a3', 'hook-a')).toBe(0); // woken above, it comes
    expect(await leave('h1', 'a3-stale', 'hook-a')).toEqual([]);
    expect(await states.get('h1')).toMatchObject({ inFlight: 2 });
    expect(await enter('h1', 'a3', 'hook-a')).toBe(0); // the same attempt asking again keeps its slot
    expect(await states.get('h1')).toMatchObject({ inFlight: 2 });
  });

  it('keeps no slot idle while only one workspace waits: whoever comes first takes it', async () => {
    for (const id of ['p1', 'p2', 'p3']) expect(await enter('h10', id, `hook-${id}`)).toBe(0);
    expect(await enter('h10', 'q', 'hook-q')).toBeGreaterThan(0);
    expect(await leave('h10', 'p1', 'hook-p1')).toEqual(['job-q']);
    expect(await enter('h10', 'r', 'hook-r')).toBe(0);
    // q, woken, finds the slot taken and is in line again.
    expect(await enter('h10', 'q', 'hook-q')).toBeGreaterThan(0);
  });

  it('passes the wake of a woken job that is gone to the next in line, with no slot kept', async () => {
    for (const id of ['t1', 't2', 't3']) expect(await enter('h11', id, `hook-${id}`)).toBe(0);
    for (const id of ['u', 'v']) expect(await enter('h11', id, `hook-${id}`)).toBeGreaterThan(0);
    expect(await leave('h11', 't1', 'hook-t1')).toEqual(['job-u']);
    // u's job was removed (its webhook deleted): the freed slot must still wake someone.
    const next = await host.leave('h11', 'job:job-u', 'hook-u', { signal: 'other', latencyMs: 0, admittedAt: 0 });
    expect(next.map((w) => w.jobId)).toEqual(['job-v']);
  });

  it('admits attempts that come together (one script run) up to the limit, and wakes them in order', async () => {
    const answers = await Promise.all(['e1', 'e2', 'e3', 'e4'].map((id, i) => enter('h2', id, `hook-${i}`)));
    expect(answers.map((a) => a === 0)).toEqual([true, true, true, false]);
    const woken = await Promise.all([leave('h2', 'e2', 'hook-1'), leave('h2', 'x', 'hook-9')]);
    expect(woken.flat()).toEqual(['job-e4']);
  });
});

describe('admission: fairness at a host', () => {
  const { host, enter, leave } = useHosts({
    DELIVERY_MAX_IN_FLIGHT_PER_WEBHOOK: '0',
    DELIVERY_HOST_INITIAL_LIMIT: '1',
  });

  it('gives free slots to waiting workspaces in turn, then to a workspace’s webhooks in turn', async () => {
    expect(await enter('h3', 'first', 'hook-x', 'ws-x')).toBe(0);
    // Workspace A queues a burst on two webhooks, then B one delivery, then C two.
    for (let i = 0; i < 6; i++)
      expect(await enter('h3', `a${i}`, i < 3 ? 'hook-a1' : 'hook-a2', 'ws-a')).toBeGreaterThan(0);
    expect(await enter('h3', 'b0', 'hook-b', 'ws-b')).toBeGreaterThan(0);
    for (const id of ['c0', 'c1']) expect(await enter('h3', id, 'hook-c', 'ws-c')).toBeGreaterThan(0);
    const order: string[] = [];
    let holder = 'first';
    let webhook = 'hook-x';
    for (let i = 0; i < 9; i++) {
      const [next] = await leave('h3', holder, webhook);
      order.push(next);
      holder = next.slice('job-'.length);
      webhook = holder.startsWith('b')
        ? 'hook-b'
        : holder.startsWith('c')
          ? 'hook-c'
          : holder < 'a3'
            ? 'hook-a1'
            : 'hook-a2';
      expect(await enter('h3', holder, webhook, `ws-${holder[0]}`)).toBe(0);
    }
    // A, B, C in turn; within A its two webhooks in turn; B's one delivery waits one attempt, not six.
    expect(order).toEqual(['job-a0', 'job-b0', 'job-c0', 'job-a3', 'job-c1', 'job-a1', 'job-a4', 'job-a2', 'job-a5']);
  });

  it('lets no newcomer pass the line while two workspaces wait: the freed slot is kept for the woken job', async () => {
    expect(await enter('h4', 'p', 'hook-p', 'ws-p')).toBe(0);
    expect(await enter('h4', 'q', 'hook-q', 'ws-q')).toBeGreaterThan(0);
    expect(await enter('h4', 'q2', 'hook-q2', 'ws-q2')).toBeGreaterThan(0);
    expect(await leave('h4', 'p', 'hook-p')).toEqual(['job-q']);
    // The slot is q's until it comes: r, arriving first, waits behind q2.
    expect(await enter('h4', 'r', 'hook-r', 'ws-r')).toBeGreaterThan(0);
    expect(await enter('h4', 'q', 'hook-q', 'ws-q')).toBe(0);
  });

  it('gives a turn kept for a job that is gone to the next in line', async () => {
    expect(
      await host.leave('h4', 'job:job-r-gone', 'hook-r', { signal: 'other', latencyMs: 0, admittedAt: 0 }),
    ).toEqual([]);
    expect(await leave('h4', 'q', 'hook-q')).toEqual(['job-q2']);
    // q2's job was removed (its webhook deleted): giving its kept turn back wakes the next, r.
    const next = await host.leave('h4', 'job:job-q2', 'hook-q2', { signal: 'other', latencyMs: 0, admittedAt: 0 });
    expect(next.map((w) => w.jobId)).toEqual(['job-r']);
    expect(await enter('h4', 'r', 'hook-r', 'ws-r')).toBe(0);
  });
});

describe('admission: the adaptive limit and the breaker, its two ends', () => {
  const { config, states, enter, leave } = useHosts({
    DELIVERY_HOST_INITIAL_LIMIT: '8',
    DELIVERY_BREAKER_THRESHOLD: '2',
    DELIVERY_BREAKER_COOLDOWN_MS: '300',
  });

  it('is cut at once by a 503 of an attempt admitted after the last cut, not by the ones before', async () => {
    const admittedAt = Date.now() - 1_000; // before the cut below, whatever the clock's resolution
    for (let i = 0; i < 4; i++) expect(await enter('h5', `x${i}`, `hook-${i}`)).toBe(0);
    await leave('h5', 'x0', 'hook-0', '503', admittedAt);
    expect(await states.get('h5')).toMatchObject({ limit: 4, inFlight: 3, lastChange: { reason: '503' } });
    // Attempts admitted before the cut say nothing of the new limit.
    await leave('h5', 'x1', 'hook-1', '503', admittedAt);
    expect(await states.get('h5')).toMatchObject({ limit: 4, inFlight: 2 });
    await leave('h5', 'x2', 'hook-2', 'timeout', Date.now() + 1);
    expect(await states.get('h5')).toMatchObject({ limit: 2, inFlight: 1, lastChange: { reason: 'timeout' } });
  });

  it('grows by one slot per prompt answer while the host was never overloaded (slow start), not after', async () => {
    for (let i = 0; i < 8; i++) expect(await enter('h9', `s${i}`, `hook-${i}`)).toBe(0);
    await leave('h9', 's0', 'hook-0', 'ok');
    expect(await states.get('h9')).toMatchObject({ limit: 9, lastChange: { reason: 'growth' } });
    await leave('h9', 's1', 'hook-1', 'ok');
    expect(await states.get('h9')).toMatchObject({ limit: 10 });
    await leave('h9', 's2', 'hook-2', '503', Date.now() + 1);
    expect(await states.get('h9')).toMatchObject({ limit: 5, lastChange: { reason: '503' } });
    // Overloaded once: no more slow start.
    await leave('h9', 's3', 'hook-3', 'ok');
    expect(await states.get('h9')).toMatchObject({ limit: 5 });
  });

  it('opens the breaker on timeouts in a row: the limit goes to the minimum and waiters wait for its end', async () => {
    const later = Date.now() + 60_000; // admitted "after" any cut: each timeout may cut
    for (const id of ['y1', 'y2']) expect(await enter('h6', id)).toBe(0);
    await leave('h6', 'y1', 'hook', 'timeout', later);
    await leave('h6', 'y2', 'hook', 'timeout', later);
    expect(await states.get('h6')).toMatchObject({ limit: 1, inFlight: 0, lastChange: { reason: 'paused' } });
    const openedAt = Date.now();
    const wait = await enter('h6', 'y3');
    // It opened just before openedAt, for the 300 ms cooldown.
    expect(wait).toBeGreaterThan(openedAt + 200);
    expect(wait).toBeLessThanOrEqual(openedAt + 300);
  });

  it('lets one attempt probe after the cooldown; its answer closes the breaker and gives the others their turn', async () => {
    await new Promise((resolve) => setTimeout(resolve, 350));
    expect(await enter('h6', 'y3')).toBe(0); // the probe (it was in line: it leaves it)
    expect(await enter('h6', 'y4')).toBeGreaterThan(0);
    expect(await leave('h6', 'y3', 'hook', 'ok')).toEqual(['job-y4']);
  });

  it('takes a timeout while the host answered others promptly as that request’s own: no cut, no breaker count', async () => {
    const after = () => Date.now() + 60_000; // admitted after every answer so far
    for (const id of ['e1', 'e2', 'e3', 'e4', 'e5']) expect(await enter('h8', id)).toBe(0);
    // Nothing answered while e4 hung: the host may be stalled, so it cuts (and counts one to the breaker).
    await leave('h8', 'e4', 'hook', 'timeout', after());
    expect(await states.get('h8')).toMatchObject({ limit: 4, lastChange: { reason: 'timeout' } });
    const sinceTheCut = Date.now(); // e2's admission, as it will say: after the cut, before the answers
    await leave('h8', 'e1', 'hook', 'ok');
    // A window's age later, the answer that makes the limit's worth of them (4) closes the window (the limit
    // grows): the next one holds no answer.
    await new Promise((resolve) => setTimeout(resolve, 150));
    for (const id of ['e6', 'e7', 'e8']) {
      expect(await enter('h8', id)).toBe(0);
      await leave('h8', id, 'hook', 'ok');
    }
    // e2 hung while e1 and e6-e8 were answered: no cut, and it does not count towards the breaker.
    await leave('h8', 'e2', 'hook', 'timeout', sinceTheCut);
    expect(await states.get('h8')).toMatchObject({ limit: 5, lastChange: { reason: 'growth' } });
    // Two timeouts with nothing answered during them open it (threshold 2): e2 was not one of them.
    await leave('h8', 'e3', 'hook', 'timeout', after());
    expect(await states.get('h8')).toMatchObject({ limit: 2, lastChange: { reason: 'timeout' } });
    await leave('h8', 'e5', 'hook', 'timeout', after());
    expect(await states.get('h8')).toMatchObject({ limit: 1, inFlight: 0, lastChange: { reason: 'paused' } });
  });

  it('keeps a window open until it holds the limit’s worth of answers (at most 10), however old it is', async () => {
    const redis = new Redis(TEST_REDIS_URL);
    const window = async () => {
      const [epoch, samples] = await redis.hmget(`${config.queuePrefix}:dest:h20:limit`, 'epoch', 'wcount');
      return { epoch: Number(epoch ?? 0), samples: Number(samples ?? 0) };
    };
    try {
      // One at a time: the limit (8) is never in use, so slow start leaves it at 8.
      for (let i = 1; i <= 7; i++) {
        expect(await enter('h20', `w${i}`)).toBe(0);
        await leave('h20', `w${i}`, 'hook', 'ok');
        // Past the least window (100 ms): only the count of answers holds it open.
        await new Promise((resolve) => setTimeout(resolve, 110));
      }
      expect(await window()).toEqual({ epoch: 0, samples: 7 });
      expect(await enter('h20', 'w8')).toBe(0);
      await leave('h20', 'w8', 'hook', 'ok');
      expect(await window()).toEqual({ epoch: 1, samples: 0 });
      expect(await states.get('h20')).toMatchObject({ limit: 8 });
    } finally {
      redis.disconnect();
    }
  });

  it('takes the breaker signals of attempts that end together in order', async () => {
    // Timeouts with an answer between each (at most two script runs): each answer resets the count.
    const signals: HostSignal[] = ['timeout', 'answered', 'timeout', 'ok', 'timeout'];
    await Promise.all(signals.map((signal, i) => leave('h7', `z${i}`, 'hook', signal)));
    expect(await enter('h7', 'z')).toBe(0);
  });
});

describe('admission: a slot whose holder died', () => {
  // A slot lives 2 x DELIVERY_TIMEOUT_MS + 5 s unless released.
  const { config, host, enter } = useHosts({ DELIVERY_TIMEOUT_MS: '100', DELIVERY_HOST_INITIAL_LIMIT: '1' });

  it('frees itself at its expiry, which is when its waiters come back, and goes to the first in line', async () => {
    const before = Date.now();
    expect(await enter('h8', 'dead')).toBe(0); // its worker is killed: never released
    const waitUntil = await enter('h8', 'w1', 'hook-w');
    expect(await enter('h8', 'w2', 'hook-w')).toBe(waitUntil);
    expect(waitUntil).toBeGreaterThanOrEqual(before + 5_200);
    expect(waitUntil).toBeLessThanOrEqual(Date.now() + 5_200);
    await new Promise((resolve) => setTimeout(resolve, waitUntil - Date.now() + 50));
    // w2 comes back first, by its own time: the freed slot wakes w1 (first in line), and with one workspace
    // in line it is kept for nobody: w2, here first, takes it.
    const [answer, woken] = await host.enter({
      destination: 'h8',
      holder: 'w2:t',
      jobId: 'job-w2',
      webhookId: 'hook-w',
      workspaceId: 'ws',
      cap: config.maxInFlightPerWebhook,
    });
    expect(woken.map((w) => w.jobId)).toEqual(['job-w1']);
    expect(answer).toBe(0);
  }, 15_000);

  it('leaves no admission key without a time to live', async () => {
    const redis = new Redis(TEST_REDIS_URL);
    try {
      const keys = await redis.keys(`${config.queuePrefix}:dest:*`);
      expect(keys.length).toBeGreaterThan(1);
      const ttls = await Promise.all(keys.map((key) => redis.pttl(key)));
      expect(ttls.filter((ttl) => ttl < 0)).toEqual([]);
    } finally {
      redis.disconnect();
    }
  });
});

describe('admission: a Redis that stops answering', () => {
  it('fails the call within 5 s, so its job is retried instead of holding its lock for good', async () => {
    const proxy = TcpProxy.to(TEST_REDIS_URL, 6379);
    await proxy.start();
    const config = loadConfig({
      NODE_ENV: 'test',
      REDIS_URL: proxy.url(TEST_REDIS_URL),
      QUEUE_PREFIX: `cw_test_${randomBytes(6).toString('hex')}`,
    });
    const redis = new RedisClients(config);
    const host = new HostAdmission(config, redis);
    try {
      const entering = {
        destination: 'lost',
        holder: 'a:t',
        jobId: 'job-a',
        webhookId: 'hook',
        workspaceId: 'ws',
        cap: 20,
      };
      expect((await host.enter(entering))[0]).toBe(0);
      // As a failover can: the command is written, and no answer ever comes.
      proxy.hold();
      const startedAt = Date.now();
      await expect(host.enter({ ...entering, holder: 'b:t', jobId: 'job-b' })).rejects.toThrow(
        'admission: Redis did not answer within 5000 ms',
      );
      expect(Date.now() - startedAt).toBeGreaterThanOrEqual(4_900);
    } finally {
      await proxy.stop();
      await redis.onApplicationShutdown();
    }
  }, 15_000);
});
