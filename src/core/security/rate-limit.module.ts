import { Module } from '@nestjs/common';
import { RateLimitCounters } from './rate-limit-counters.js';
import { RateLimiter } from './rate-limiter.js';

/** The api's request limits; configureApp mounts RateLimiter.middleware ahead of body parsing. */
@Module({
  providers: [RateLimitCounters, RateLimiter],
  exports: [RateLimiter],
})
export class RateLimitModule {}
