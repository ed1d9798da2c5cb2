import { Module } from '@nestjs/common';
import { APP_INTERCEPTOR } from '@nestjs/core';
import { IdempotencyInterceptor } from './idempotency.interceptor.js';
import { IdempotencyKeysModule } from './idempotency-keys.module.js';

/** Idempotency keys on every POST and PATCH of the API (DESIGN 7.6); import it after HttpPipelineModule. */
@Module({
  imports: [IdempotencyKeysModule],
  providers: [{ provide: APP_INTERCEPTOR, useClass: IdempotencyInterceptor }],
})
export class IdempotencyModule {}
