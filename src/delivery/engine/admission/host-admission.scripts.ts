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
    local function held(webhookId) return tonumber(redis.call('HGET', webhooks, webhookId) or '0') end
    local function underCap(webhookId)
      local own = tonumber(redis.call('HGET', caps, webhookId) or cap)
      return own == 0 or held(webhookId) < own
    end
    function H.limit() return tonumber(redis.call('HGET', state, 'limit') or initial) end
    function H.paused() return redis.call('HEXISTS', breaker, 'open_until') == 1 end

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

    local function take(member, webhookId, expiresAt)
      redis.call('ZADD', slots, expiresAt, member)
      redis.call('HINCRBY', webhooks, webhookId, 1)
      H.created[slots] = true
      H.created[webhooks] = true
      H.count = H.count + 1
      if H.count > H.peak then H.peak = H.count end
    end

    -- A slot already removed from the set: its webhook's count follows, and the webhook may rejoin the line.
    local function freed(member)
      local webhookId = string.match(member, '^(.-)|')
      if not webhookId then return end
      if redis.call('HINCRBY', webhooks, webhookId, -1) <= 0 then redis.call('HDEL', webhooks, webhookId) end
      H.count = H.count - 1
      H.freed = H.freed + 1
      join(webhookId)
    end

    function H.expire()
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
      if H.paused() then return end
      local limit = H.limit()
      local budget = H.freed
      H.freed = 0
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
      redis.call('RPUSH', queueOf(webhookId), jobId)
      redis.call('PEXPIRE', queueOf(webhookId), keyTtl)
      redis.call('HSET', owners, webhookId, workspaceId)
      H.created[waiting] = true
      H.created[owners] = true
      join(webhookId)
    end

    -- Out of line: admitted without its turn (the breaker's probe, or room with nobody ahead).
    function H.leaveLine(jobId, webhookId, workspaceId)
      if redis.call('HDEL', waiting, jobId) == 0 then return end
      redis.call('LREM', queueOf(webhookId), 1, jobId)
      requeue(workspaceId, webhookId, nil)
    end

    -- When room is certain to appear without any release: the breaker's end, else the first slot's expiry.
    function H.deadline()
      local openUntil = tonumber(redis.call('HGET', breaker, 'open_until') or '0')
      if openUntil > now then return openUntil end
      local first = redis.call('ZRANGE', slots, 0, 0, 'WITHSCORES')[2]
      return first and math.min(tonumber(first), now + slotTtl) or now + slotTtl
    end

    function H.admit(holder, jobId, webhookId, workspaceId, ownCap)
      local member = webhookId .. '|' .. holder
      if redis.call('HGET', caps, webhookId) ~= ownCap then
        redis.call('HSET', caps, webhookId, ownCap)
        H.created[caps] = true
      end
      -- Its turn came: the slot kept for it becomes its own (the set, emptied by the ZREM, made anew).
      if redis.call('ZREM', slots, webhookId .. '|job:' .. jobId) == 1 then
        redis.call('ZADD', slots, now + slotTtl, member)
        H.created[slots] = true
        return 0
      end
      if redis.call('ZSCORE', slots, member) then return 0 end
      local breakerState = redis.call('HMGET', breaker, 'open_until', 'probe_until')
      local openUntil = tonumber(breakerState[1] or '0')
      if openUntil > 0 and openUntil <= now and tonumber(breakerState[2] or '0') <= now then
        -- Paused and cooled down: this attempt is the probe, the only one until it answers.
        redis.call('HSET', breaker, 'probe_until', now + slotTtl)
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
      H.wait(jobId, webhookId, workspaceId)
      return H.deadline()
    end

    -- Every key lives keyTtl past the host's last call. Writes keep a key's time to live, so a call gives
    -- it only to the keys it may have created, and to all of them once a quarter of it has passed (the
    -- stamp is in state, so a state made anew is stamped, and timed, at once).
    function H.touch()
      local seen = redis.call('HMGET', state, 'wpeak', 'touched')
      -- The window's peak in flight: whether the limit is in use, so whether it may grow.
      if H.peak > tonumber(seen[1] or '0') then redis.call('HSET', state, 'wpeak', H.peak) end
      if now - tonumber(seen[2] or '0') >= keyTtl / 4 then
        redis.call('HSET', state, 'touched', now)
        for _, key in ipairs({ slots, webhooks, state, line, waiting, owners, caps }) do redis.call('PEXPIRE', key, keyTtl) end
      else
        for key in pairs(H.created) do redis.call('PEXPIRE', key, keyTtl) end
      end
    end

    H.keys = { breaker = breaker, state = state }
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
    local breaker, state = host.keys.breaker, host.keys.state
    host.expire()
    -- No breaker: an answer has nothing to close (the usual case, read once per host, not per attempt).
    local closed = redis.call('EXISTS', breaker) == 0
    local function restart()
      local epoch = redis.call('HINCRBY', state, 'epoch', 1)
      redis.call('HSET', state, 'wstart', now, 'wcount', 0, 'wother', 0, 'wsum', 0, 'wpeak', host.count)
      redis.call('HDEL', state, 'wmin')
      return epoch
    end
    local function closeWindow(drop)
      local w = redis.call('HMGET', state, 'limit', 'wpeak', 'wcount', 'wsum', 'wmin', 'minrtt', 'ceiling', 'minrtt_load',
        'wother')
      local epoch = restart()
      if drop ~= '' then redis.call('HSET', state, 'cut_at', now) end
      return { tostring(epoch), w[1] or initial, w[2] or '0', w[3] or '0', w[4] or '0', w[5] or '0', drop, w[6] or '', w[7] or '',
        w[8] or '', w[9] or '0' }
    end
    -- A window closes once it is old enough and holds enough answers (minSamples, or the limit's worth);
    -- a window not started yet is started by this answer.
    local function full(wstart, answers, limit, minRtt)
      if not wstart then
        redis.call('HSET', state, 'wstart', now)
        return false
      end
      -- A host with few answers keeps its window open until it has enough to judge: a decision per answer
      -- would be noise, and a script call per delivery at a host that sees a few a second.
      if answers < math.min(minSamples, limit) then return false end
      return now - tonumber(wstart) >= math.max(tonumber(minRtt or '0'), minWindow)
    end
    local function sample(signal, latency, admittedAt, excused)
      if DROPS[signal] then
        if excused or tonumber(admittedAt) < tonumber(redis.call('HGET', state, 'cut_at') or '0') then return {} end
        return closeWindow(signal)
      end
      -- Another answer (not 2xx, 429 or 503) is no latency sample (an error may come faster or slower than
      -- the host's real work); it counts as an answer, so a host answering only errors still closes windows.
      if signal == 'answered' then
        local w = redis.call('HMGET', state, 'wstart', 'wcount', 'minrtt', 'limit')
        local answers = redis.call('HINCRBY', state, 'wother', 1) + tonumber(w[2] or '0')
        if full(w[1], answers, tonumber(w[4] or initial), w[3]) then return closeWindow('') end
        return {}
      end
      if signal ~= 'ok' then return {} end
      local w = redis.call('HMGET', state, 'wstart', 'wmin', 'minrtt', 'ceiling', 'limit', 'wother')
      local ms = tonumber(latency)
      local samples = redis.call('HINCRBY', state, 'wcount', 1)
      redis.call('HINCRBY', state, 'wsum', ms)
      if not w[2] or ms < tonumber(w[2]) then redis.call('HSET', state, 'wmin', ms) end
      local limit = tonumber(w[5] or initial)
      local fastest = math.min(tonumber(w[3] or ms), tonumber(w[2] or ms), ms)
      -- Prompt (under decideLimit's queueing line): the host has room, whatever hangs beside this answer.
      if ms <= fastest * 2 + 100 then redis.call('HSET', state, 'prompt_at', now) end
      -- Slow start, per answer (TCP's cwnd + 1 per ACK): a host never seen overloaded, answering within a
      -- fifth of its minimum plus 50 ms, its limit in use, gains a slot per answer: doubling per round trip.
      if not w[4] and limit < maxLimit and host.count * 2 >= limit and ms <= fastest * 1.2 + 50 then
        redis.call('HSET', state, 'limit', limit + 1, 'reason', 'growth', 'changed_at', now)
      end
      if full(w[1], samples + tonumber(w[6] or '0'), limit, w[3]) then return closeWindow('') end
      return {}
    end
    local function release(holder, webhookId, signal, latency, admittedAt)
      local window = {}
      -- A timeout while the host answered others promptly is that request's own (a receiver that hangs on
      -- some requests), not the host's load: it neither cuts the limit nor counts towards the breaker.
      local excused = signal == 'timeout'
        and tonumber(redis.call('HGET', state, 'prompt_at') or '0') >= tonumber(admittedAt)
      if host.free(webhookId .. '|' .. holder) then
        window = sample(signal, latency, admittedAt, excused)
      elseif string.sub(holder, 1, 4) == 'job:' then
        -- A woken job that is gone, woken with no slot kept (one workspace in line): its wake goes to the next.
        host.freed = host.freed + 1
      end
      if ANSWERS[signal] then
        if not closed then
          redis.call('DEL', breaker)
          closed = true
        end
        return window
      end
      -- A breaker switched off (threshold 0) is never opened; the limit still takes the timeout.
      if signal ~= 'timeout' or excused or threshold == 0 then return window end
      closed = false
      local openUntil = tonumber(redis.call('HGET', breaker, 'open_until') or '0')
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
      -- Paused: it resumes from the least limit. A window closed above is superseded (its epoch is past).
      restart()
      redis.call('HSET', state, 'limit', ARGV[8], 'reason', 'paused', 'changed_at', now, 'cut_at', now)
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
  local state = host.keys.state
  if redis.call('HGET', state, 'epoch') ~= ARGV[7] then return { {}, woken } end
  -- An unchanged limit is not written: answers since the window closed may have grown it (slow start).
  if ARGV[10] ~= '' then redis.call('HSET', state, 'limit', ARGV[8]) end
  if ARGV[9] ~= '' then redis.call('HSET', state, 'minrtt', ARGV[9], 'minrtt_load', ARGV[12]) end
  if ARGV[11] ~= '' then redis.call('HSET', state, 'ceiling', ARGV[11]) else redis.call('HDEL', state, 'ceiling') end
  if ARGV[10] ~= '' then redis.call('HSET', state, 'reason', ARGV[10], 'changed_at', now) end
  host.expire()
  -- The room a raised limit made may wake as many waiters.
  host.freed = math.max(0, host.limit() - host.count)
  host.grant()
  host.touch()
  return { {}, woken }`;
