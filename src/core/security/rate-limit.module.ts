import { Module } from '@nestjs/common';
import { RateLimiter } from './rate-limiter.js';

/**
 * The api's request limits (RATE_LIMIT_*, 0 turns one off); the guards that apply them
 * (auth/rate-limit.guards.ts, as they skip the public routes and count per API key) are registered in
 * AppModule, in order.
 */
@Module({ providers: [RateLimiter], exports: [RateLimiter] })
export class RateLimitModule {}
