// Its own module, free of imports, so the benchmark's bare app makes the very same Redis call.

/**
 * Fixed windows, in rule order (KEYS[i] with ARGV[2i-1] = limit, 0 = not counted, ARGV[2i] = window ms):
 * each counted rule's hits and ms left, stopping after the first one over its limit, as a client refused
 * there is not counted by the rules after it. The first hit starts a window.
 */
export const COUNT_HITS = `
  local counted = {}
  for i = 1, #KEYS do
    local limit = tonumber(ARGV[2 * i - 1])
    if limit > 0 then
      local hits = redis.call('INCR', KEYS[i])
      local ttl = redis.call('PTTL', KEYS[i])
      if ttl < 0 then
        redis.call('PEXPIRE', KEYS[i], ARGV[2 * i])
        ttl = tonumber(ARGV[2 * i])
      end
      counted[2 * i - 1] = hits
      counted[2 * i] = ttl
      if hits > limit then return counted end
    else
      counted[2 * i - 1] = 0
      counted[2 * i] = 0
    end
  end
  return counted`;
