import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { IdempotencyKeyEntity } from './idempotency-key.entity.js';
import { IdempotencyKeysService } from './idempotency-keys.service.js';

/** The idempotency_keys rows, for the API's interceptor and for the worker's purge of expired keys. */
@Module({
  imports: [TypeOrmModule.forFeature([IdempotencyKeyEntity])],
  providers: [IdempotencyKeysService],
  exports: [IdempotencyKeysService],
})
export class IdempotencyKeysModule {}
