// The Redis side of a host's admission (host-admission.ts calls these; admission.ts states the rules).
//
// Per host, under `base` (hostKeys): `inflight`, a sorted set of slots `webhookId|holder` scored by expiry (a
// killed worker's slots free themselves), where a holder is an attempt (`deliveryId:lockToken`) or a turn
// kept for a woken waiter (`job:jobId`); `webhooks`, the slots per webhook; `breaker`; `limit`, the adaptive
// limit, its window and the round counter `turn`; and the line of waiters: `line`, the workspaces with a
// webhook that may take a slot, ordered by turn; `base:line:<workspace>`, that workspace's such webhooks,
// ordered by turn; `base:wait:<webhook>`, its waiting job ids in arrival order; `waiting`, job id -> webhook
// (who is in line); `owners`, webhook -> workspace for webhooks with waiters; `base:caps`, webhook -> its
// in-flight cap as its latest attempt brought it (0 = none), so a waiter's cap is known when others release.
//
// A webhook at its cap leaves its workspace's turn until one of its slots frees, so the line's head can
// always take a slot. Served members go to the back (score = the next turn); a newcomer joins at the
// back too (score = the current turn + 0.5). With every attempt costing one slot, this round robin is
// deficit round robin with a quantum of one.
//
// The per-host keys of a call are declared (KEYS) and all share the host's slot in a Redis Cluster under a
// hash-tag prefix; the per-workspace and per-webhook lines are derived from `base` in the same slot.
//
// A call reads each thing it needs of a host once and keeps it as it changes it (the state hash, the
// breaker, each webhook's cap and count, how many wait), and writes the state's changes once, at the
// host's end (touch): a script runs alone, so nothing else changes them meanwhile, and a busy host's
// batch would otherwise pay a few redis.calls per attempt for the same fields.

const HOST_KEYS = 7;

// ARGV of every script: now, default webhook cap (0 = none; for a webhook none of whose attempts brought
// its own), slot ttl, initial limit, key ttl. Host(k, base) gives
// the operations on the host whose keys start at KEYS[k + 1]; `woken` collects `{ group, webhookId, jobId }`
// of the waiters a call gave a turn to (their slot kept for them), for the caller to promote.
const HOST = `
  local now = tonumber(ARGV[1])
  local cap = tonumber(ARGV[2])
  local slotTtl = tonumber(ARGV[3])
  local initial = ARGV[4]
  local keyTtl = tonumber(ARGV[5])
  local woken = {}

  local function Host(k, base, group)
    local slots, breaker, state, webhooks, line, waiting, owners =
      KEYS[k + 1], KEYS[k + 2], KEYS[k + 3], KEYS[k + 4], KEYS[k + 5], KEYS[k + 6], KEYS[k + 7]
    -- freed: slots this call freed, each of which may wake one waiter when no turn is kept (grant).
    -- created: the keys this call wrote that it may have created, so without a time to live (touch).
    local H = { count = redis.call('ZCARD', slots), peak = 0, freed = 0, created = {} }
    local function lineOf(workspaceId) return base .. ':line:' .. workspaceId end
    local function queueOf(webhookId) return base .. ':wait:' .. webhookId end
    local caps = base .. ':caps'
    -- What this call read of the host, as it changes it: per webhook its cap (false: none) and count, the
    -- breaker's two times, how many wait, and the state hash (fields read on first use, changes written
    -- by touch: \`dirty\` names them, false for a field to delete).
    local ownCaps, counts, gate, waiters = {}, {}, nil, nil
    local fields, dirty = nil, {}
    local STATE_FIELDS = { 'limit', 'wstart', 'wcount', 'wsum', 'wmin', 'wother', 'wpeak', 'minrtt', 'minrtt_load',
      'ceiling', 'prompt_at', 'cut_at', 'epoch', 'touched' }
    function H.get(field)
      if not fields then
        fields = {}
        local values = redis.call('HMGET', state, unpack(STATE_FIELDS))
        for i, name in ipairs(STATE_FIELDS) do fields[name] = values[i] end
      end
      return fields[field]
    end
    function H.set(field, value)
      H.get(field)
      fields[field] = value
      dirty[field] = value
    end
    local function ownCapOf(webhookId)
      if ownCaps[webhookId] == nil then ownCaps[webhookId] = redis.call('HGET', caps, webhookId) end
      return ownCaps[webhookId]
    end
    local function held(webhookId)
      if counts[webhookId] == nil then counts[webhookId] = tonumber(redis.call('HGET', webhooks, webhookId) or '0') end
      return counts[webhookId]
    end
    local function underCap(webhookId)
      local own = tonumber(ownCapOf(webhookId) or cap)
      return own == 0 or held(webhookId) < own
    end
    function H.limit() return tonumber(H.get('limit') or initial) end
    -- The breaker's open_until and probe_until (0 when unset).
    function H.gate()
      if not gate then
        local times = redis.call('HMGET', breaker, 'open_until', 'probe_until')
        gate = { tonumber(times[1] or '0'), tonumber(times[2] or '0') }
      end
      return gate
    end
    function H.setGate(openUntil, probeUntil) gate = { openUntil, probeUntil } end
    function H.paused() return H.gate()[1] > 0 end
    local function anyWaiting()
      if not waiters then waiters = redis.call('HLEN', waiting) end
      return waiters > 0
    end

    -- A webhook with waiters and room takes its place in its workspace's turn, the workspace in the host's.
    local function join(webhookId)
      local workspaceId = redis.call('HGET', owners, webhookId)
      if not workspaceId or not underCap(webhookId) then return end
      local back = tonumber(redis.call('HGET', state, 'turn') or '0') + 0.5
      redis.call('ZADD', lineOf(workspaceId), 'NX', back, webhookId)
      redis.call('PEXPIRE', lineOf(workspaceId), keyTtl)
      redis.call('ZADD', line, 'NX', back, workspaceId)
      H.created[line] = true
    end

    -- After a webhook's waiter left the line: it goes to the back of its workspace's turn, or out of it
    -- (no waiters left, or at its cap); the workspace likewise in the host's.
    local function requeue(workspaceId, webhookId, served)
      local own = lineOf(workspaceId)
      local queue = queueOf(webhookId)
      if redis.call('LLEN', queue) == 0 then
        redis.call('ZREM', own, webhookId)
        redis.call('HDEL', owners, webhookId)
      elseif not underCap(webhookId) then
        redis.call('ZREM', own, webhookId)
      elseif served then
        redis.call('ZADD', own, 'XX', served, webhookId)
      end
      if redis.call('ZCARD', own) == 0 then redis.call('ZREM', line, workspaceId)
      elseif served then redis.call('ZADD', line, 'XX', served, workspaceId) end
    end

    local function holds(member) return redis.call('ZSCORE', slots, member) ~= false end

    -- A member held already (a retried call) keeps its slot and is not counted twice.
    local function take(member, webhookId, expiresAt)
      if redis.call('ZADD', slots, 'NX', expiresAt, member) == 0 then return end
      counts[webhookId] = redis.call('HINCRBY', webhooks, webhookId, 1)
      H.created[slots] = true
      H.created[webhooks] = true
      H.count = H.count + 1
      if H.count > H.peak then H.peak = H.count end
    end

    -- A slot already removed from the set: its webhook's count follows, and the webhook may rejoin the line.
    local function freed(member)
      local webhookId = string.match(member, '^(.-)|')
      if not webhookId then return end
      local left = redis.call('HINCRBY', webhooks, webhookId, -1)
      if left <= 0 then
        redis.call('HDEL', webhooks, webhookId)
        left = 0
      end
      counts[webhookId] = left
      H.count = H.count - 1
      H.freed = H.freed + 1
      -- Nobody in line at the host: no webhook of it has a waiter to rejoin.
      if anyWaiting() then join(webhookId) end
    end

    function H.expire()
      if H.count == 0 then return end
      local expired = redis.call('ZRANGEBYSCORE', slots, '-inf', now)
      if #expired == 0 then return end
      redis.call('ZREMRANGEBYSCORE', slots, '-inf', now)
      for _, member in ipairs(expired) do freed(member) end
    end

    -- Frees exactly this slot (a stale holder cannot free a newer one's); true if it was held.
    function H.free(member)
      if redis.call('ZREM', slots, member) == 0 then return false end
      freed(member)
      return true
    end

    -- Room goes to the line, in turn. While two or more workspaces wait, each waiter given a turn has the
    -- slot kept for it until it comes, so no newcomer passes the line (fairness between workspaces). With
    -- one workspace in line there is nobody to be unfair to, and a kept slot would sit idle while its job
    -- is fetched: each freed slot wakes one waiter and stays free for whichever job comes first.
    function H.grant()
      local budget = H.freed
      H.freed = 0
      -- Nobody in line: the usual case at a host with room, read once per call (anyWaiting).
      if not anyWaiting() or H.paused() then return end
      local limit = H.limit()
      while H.count < limit do
        local fair = redis.call('ZCARD', line) >= 2
        if not fair and budget <= 0 then return end
        local workspaceId = redis.call('ZRANGE', line, 0, 0)[1]
        if not workspaceId then return end
        local webhookId = redis.call('ZRANGE', lineOf(workspaceId), 0, 0)[1]
        -- At its cap since it joined (an attempt of its own admitted with room): out until a slot frees.
        local jobId = webhookId and underCap(webhookId) and redis.call('LPOP', queueOf(webhookId))
        if jobId then
          redis.call('HDEL', waiting, jobId)
          if waiters then waiters = waiters - 1 end
          if fair then take(webhookId .. '|job:' .. jobId, webhookId, now + slotTtl) else budget = budget - 1 end
          woken[#woken + 1] = { group, webhookId, jobId }
          requeue(workspaceId, webhookId, redis.call('HINCRBY', state, 'turn', 1))
        elseif webhookId then
          requeue(workspaceId, webhookId, nil)
        else
          redis.call('ZREM', line, workspaceId)
        end
      end
    end

    -- In line (once: a waiter that comes back keeps its place).
    function H.wait(jobId, webhookId, workspaceId)
      if redis.call('HSETNX', waiting, jobId, webhookId) == 0 then return end
      if waiters then waiters = waiters + 1 end
      redis.call('RPUSH', queueOf(webhookId), jobId)
      redis.call('PEXPIRE', queueOf(webhookId), keyTtl)
      redis.call('HSET', owners, webhookId, workspaceId)
      H.created[waiting] = true
      H.created[owners] = true
      join(webhookId)
    end

    -- Out of line: admitted without its turn (the breaker's probe, or room with nobody ahead).
    function H.leaveLine(jobId, webhookId, workspaceId)
      if not anyWaiting() or redis.call('HDEL', waiting, jobId) == 0 then return end
      waiters = waiters - 1
      redis.call('LREM', queueOf(webhookId), 1, jobId)
      requeue(workspaceId, webhookId, nil)
    end

    -- When room is certain to appear without any release: the breaker's end, else the first slot's expiry.
    function H.deadline()
      local openUntil = H.gate()[1]
      if openUntil > now then return openUntil end
      local first = redis.call('ZRANGE', slots, 0, 0, 'WITHSCORES')[2]
      return first and math.min(tonumber(first), now + slotTtl) or now + slotTtl
    end

    function H.admit(holder, jobId, webhookId, workspaceId, ownCap)
      local member = webhookId .. '|' .. holder
      if ownCapOf(webhookId) ~= ownCap then
        redis.call('HSET', caps, webhookId, ownCap)
        ownCaps[webhookId] = ownCap
        H.created[caps] = true
      end
      -- Its turn came: the slot kept for it becomes its own (the set, emptied by the ZREM, made anew).
      if redis.call('ZREM', slots, webhookId .. '|job:' .. jobId) == 1 then
        redis.call('ZADD', slots, now + slotTtl, member)
        H.created[slots] = true
        return 0
      end
      local openUntil, probeUntil = unpack(H.gate())
      -- Holding a slot already (a retried call) is admitted: asked only where it would not be admitted anew.
      if openUntil > 0 and openUntil <= now and probeUntil <= now then
        if holds(member) then return 0 end
        -- Paused and cooled down: this attempt is the probe, the only one until it answers.
        redis.call('HSET', breaker, 'probe_until', now + slotTtl)
        H.setGate(openUntil, now + slotTtl)
        H.leaveLine(jobId, webhookId, workspaceId)
        take(member, webhookId, now + slotTtl)
        return 0
      end
      -- grant() ran first: room left now means nobody eligible is ahead, or one workspace waits (no turn kept).
      if openUntil == 0 and H.count < H.limit() and underCap(webhookId) then
        H.leaveLine(jobId, webhookId, workspaceId)
        take(member, webhookId, now + slotTtl)
        return 0
      end
      if holds(member) then return 0 end
      H.wait(jobId, webhookId, workspaceId)
      return H.deadline()
    end

    -- Every key lives keyTtl past the host's last call. Writes keep a key's time to live, so a call gives
    -- it only to the keys it may have created, and to all of them once a quarter of it has passed (the
    -- stamp is in state, so a state made anew is stamped, and timed, at once).
    -- Also writes the state's changes of the call, so it comes last.
    function H.touch()
      -- The window's peak in flight: whether the limit is in use, so whether it may grow.
      if H.peak > tonumber(H.get('wpeak') or '0') then H.set('wpeak', H.peak) end
      local refresh = now - tonumber(H.get('touched') or '0') >= keyTtl / 4
      if refresh then H.set('touched', now) end
      local changed, gone = {}, {}
      for field, value in pairs(dirty) do
        if value then
          changed[#changed + 1] = field
          changed[#changed + 1] = value
        else
          gone[#gone + 1] = field
        end
      end
      -- A state made anew has no \`touched\` yet: refreshed above, so timed at once.
      if #changed > 0 then redis.call('HSET', state, unpack(changed)) end
      if #gone > 0 then redis.call('HDEL', state, unpack(gone)) end
      dirty = {}
      if refresh then
        for _, key in ipairs({ slots, webhooks, state, line, waiting, owners, caps }) do redis.call('PEXPIRE', key, keyTtl) end
      else
        for key in pairs(H.created) do redis.call('PEXPIRE', key, keyTtl) end
      end
    end

    H.keys = { breaker = breaker }
    return H
  end

  -- The batch layout (HostAdmission.grouped writes it): per host its keys in KEYS, and in ARGV from \`at\` on
  -- its base, its number of attempts, then \`width\` arguments per attempt. Returns each attempt's answer,
  -- host by host, and the woken waiters.
  local function eachHost(at, width, start)
    local out = {}
    for g = 0, #KEYS / ${HOST_KEYS} - 1 do
      local host = Host(${HOST_KEYS} * g, ARGV[at], g)
      local attempt, finish = start(host)
      for _ = 1, tonumber(ARGV[at + 1]) do
        out[#out + 1] = attempt(unpack(ARGV, at + 2, at + 1 + width))
        at = at + width
      end
      at = at + 2
      if finish then finish() end
      host.touch()
    end
    return { out, woken }
  end`;

/**
 * Admits attempts: per attempt holder, job id, webhook id, workspace id, the webhook's cap. Answers 0 when admitted, else the
 * time the waiter is certain to find room (it is in line and is woken before then by the release that
 * gives it its turn). Expired slots are freed and room goes to the line first.
 */
export const ENTER = `${HOST}
  return eachHost(6, 5, function(host)
    host.expire()
    host.grant()
    return host.admit
  end)`;

/**
 * Ends attempts: per attempt holder, webhook id, signal, latency (ms) and admission time; ARGV after the
 * common five: breaker threshold, breaker cooldown, min limit, min window (ms), max limit, min samples. Frees the slot, adds what
 * the attempt showed to the host's window, feeds the breaker (its other end sets the limit to the
 * minimum), and gives the room to the line. Signals: 'ok' (2xx) adds a latency sample, 'answered' (any
 * other status) counts as an answer only; '429', '503',
 * 'refused', 'reset', 'timeout' close the window at once unless the attempt was admitted before the last
 * cut (it says nothing of the cut limit) or, for a timeout, the host answered promptly since the attempt
 * was admitted; a window also closes once it is a recent minimum latency old (at least the min window)
 * and holds min samples answers, or as many as the limit when that is fewer.
 * 'timeout' (not so excused) counts towards opening the breaker, an answer closes it. Answers
 * per attempt the closed window, if any, for decideLimit: epoch, limit, peak, samples, latency sum,
 * latency min, drop, recent minimum, ceiling, the recent minimum's load, other answers.
 */
export const LEAVE = `${HOST}
  local threshold = tonumber(ARGV[6])
  local cooldownBase = tonumber(ARGV[7])
  local minWindow = tonumber(ARGV[9])
  local maxLimit = tonumber(ARGV[10])
  local minSamples = tonumber(ARGV[11])
  local DROPS = { ['429'] = true, ['503'] = true, refused = true, reset = true, timeout = true }
  local ANSWERS = { ok = true, answered = true, ['429'] = true, ['503'] = true }
  return eachHost(12, 5, function(host)
    local breaker = host.keys.breaker
    host.expire()
    -- No breaker: an answer has nothing to close (the usual case, read once per host, not per attempt).
    local closed = redis.call('EXISTS', breaker) == 0
    local function restart()
      local epoch = tonumber(host.get('epoch') or '0') + 1
      host.set('epoch', epoch)
      host.set('wstart', now)
      host.set('wcount', 0)
      host.set('wother', 0)
      host.set('wsum', 0)
      host.set('wpeak', host.count)
      host.set('wmin', false)
      return epoch
    end
    local function closeWindow(drop)
      local g = host.get
      local w = { g('limit'), g('wpeak'), g('wcount'), g('wsum'), g('wmin'), g('minrtt'), g('ceiling'), g('minrtt_load'),
        g('wother') }
      local epoch = restart()
      if drop ~= '' then host.set('cut_at', now) end
      return { tostring(epoch), tostring(w[1] or initial), tostring(w[2] or '0'), tostring(w[3] or '0'),
        tostring(w[4] or '0'), tostring(w[5] or '0'), drop, tostring(w[6] or ''), tostring(w[7] or ''),
        tostring(w[8] or ''), tostring(w[9] or '0') }
    end
    -- A window closes once it is old enough and holds enough answers (minSamples, or the limit's worth);
    -- a window not started yet is started by this answer.
    local function full(answers, limit)
      local wstart = host.get('wstart')
      if not wstart then
        host.set('wstart', now)
        return false
      end
      -- A host with few answers keeps its window open until it has enough to judge: a decision per answer
      -- would be noise, and a script call per delivery at a host that sees a few a second.
      if answers < math.min(minSamples, limit) then return false end
      return now - tonumber(wstart) >= math.max(tonumber(host.get('minrtt') or '0'), minWindow)
    end
    local function sample(signal, latency, admittedAt, excused)
      if DROPS[signal] then
        if excused or tonumber(admittedAt) < tonumber(host.get('cut_at') or '0') then return {} end
        return closeWindow(signal)
      end
      -- Another answer (not 2xx, 429 or 503) is no latency sample (an error may come faster or slower than
      -- the host's real work); it counts as an answer, so a host answering only errors still closes windows.
      if signal == 'answered' then
        local other = tonumber(host.get('wother') or '0') + 1
        host.set('wother', other)
        if full(other + tonumber(host.get('wcount') or '0'), host.limit()) then return closeWindow('') end
        return {}
      end
      if signal ~= 'ok' then return {} end
      local ms = tonumber(latency)
      local samples = tonumber(host.get('wcount') or '0') + 1
      host.set('wcount', samples)
      host.set('wsum', tonumber(host.get('wsum') or '0') + ms)
      local wmin = host.get('wmin')
      if not wmin or ms < tonumber(wmin) then host.set('wmin', ms) end
      local limit = host.limit()
      local minRtt = host.get('minrtt')
      local fastest = math.min(tonumber(minRtt or ms), tonumber(wmin or ms), ms)
      -- Prompt (under decideLimit's queueing line): the host has room, whatever hangs beside this answer.
      if ms <= fastest * 2 + 100 then host.set('prompt_at', now) end
      -- Slow start, per answer (TCP's cwnd + 1 per ACK): a host never seen overloaded, answering within a
      -- fifth of its minimum plus 50 ms, its limit in use, gains a slot per answer: doubling per round trip.
      if not host.get('ceiling') and limit < maxLimit and host.count * 2 >= limit and ms <= fastest * 1.2 + 50 then
        host.set('limit', limit + 1)
        host.set('reason', 'growth')
        host.set('changed_at', now)
      end
      if full(samples + tonumber(host.get('wother') or '0'), limit) then return closeWindow('') end
      return {}
    end
    local function release(holder, webhookId, signal, latency, admittedAt)
      local window = {}
      -- A timeout while the host answered others promptly is that request's own (a receiver that hangs on
      -- some requests), not the host's load: it neither cuts the limit nor counts towards the breaker.
      local excused = signal == 'timeout'
        and tonumber(host.get('prompt_at') or '0') >= tonumber(admittedAt)
      if host.free(webhookId .. '|' .. holder) then
        window = sample(signal, latency, admittedAt, excused)
      elseif string.sub(holder, 1, 4) == 'job:' then
        -- A woken job that is gone, woken with no slot kept (one workspace in line): its wake goes to the next.
        host.freed = host.freed + 1
      end
      if ANSWERS[signal] then
        if not closed then
          redis.call('DEL', breaker)
          host.setGate(0, 0)
          closed = true
        end
        return window
      end
      -- A breaker switched off (threshold 0) is never opened; the limit still takes the timeout.
      if signal ~= 'timeout' or excused or threshold == 0 then return window end
      closed = false
      local openUntil = host.gate()[1]
      -- Already open: attempts that began before it opened change nothing.
      if openUntil > now then return window end
      local fails = redis.call('HINCRBY', breaker, 'fails', 1)
      if openUntil == 0 and fails < threshold then
        redis.call('PEXPIRE', breaker, 86400000)
        return window
      end
      local cooldown = cooldownBase
      if openUntil > 0 then
        cooldown = math.min(tonumber(redis.call('HGET', breaker, 'cooldown') or cooldownBase) * 2, cooldownBase * 32)
      end
      redis.call('HSET', breaker, 'open_until', now + cooldown, 'cooldown', cooldown, 'fails', 0)
      redis.call('HDEL', breaker, 'probe_until')
      redis.call('PEXPIRE', breaker, 86400000)
      host.setGate(now + cooldown, 0)
      -- Paused: it resumes from the least limit. A window closed above is superseded (its epoch is past).
      restart()
      host.set('limit', ARGV[8])
      host.set('reason', 'paused')
      host.set('changed_at', now)
      host.set('cut_at', now)
      return {}
    end
    return release, host.grant
  end)`;

/**
 * Sets the limit decideLimit chose for a closed window, unless a later window closed meanwhile (or the
 * breaker set it), and gives the room it made to the line. One host; ARGV after the common five: base,
 * epoch, limit, recent minimum ('' = unchanged) and its load, reason ('' = unchanged), ceiling ('' = none).
 */
export const DECIDE = `${HOST}
  local host = Host(0, ARGV[6], 0)
  if tostring(host.get('epoch')) ~= ARGV[7] then return { {}, woken } end
  -- An unchanged limit is not written: answers since the window closed may have grown it (slow start).
  if ARGV[10] ~= '' then host.set('limit', ARGV[8]) end
  if ARGV[9] ~= '' then
    host.set('minrtt', ARGV[9])
    host.set('minrtt_load', ARGV[12])
  end
  host.set('ceiling', ARGV[11] ~= '' and ARGV[11])
  if ARGV[10] ~= '' then
    host.set('reason', ARGV[10])
    host.set('changed_at', now)
  end
  host.expire()
  -- The room a raised limit made may wake as many waiters.
  host.freed = math.max(0, host.limit() - host.count)
  host.grant()
  host.touch()
  return { {}, woken }`;
