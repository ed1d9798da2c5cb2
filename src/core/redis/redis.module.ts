import { Global, Inject, Injectable, Module, OnModuleDestroy } from '@nestjs/common';
import { Redis } from 'ioredis';
import type { AppConfig } from '../config/config.js';
import { APP_CONFIG } from '../config/config.module.js';

const COMMAND_TIMEOUT_MS = 500;

/**
 * The api's Redis connections, one per name (rate limits, health), on REDIS_URL. No offline queue:
 * while Redis is away a command fails at once instead of holding a request until it returns.
 * (The delivery queue and destination limiter keep their own connections in src/delivery.)
 */
@Injectable()
export class RedisClients implements OnModuleDestroy {
  private readonly clients = new Map<string, Redis>();

  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {}

  get(name: string): Redis {
    let client = this.clients.get(name);
    if (!client) {
      client = new Redis(this.config.redisUrl, {
        connectionName: name,
        enableOfflineQueue: false,
        maxRetriesPerRequest: 0,
        commandTimeout: COMMAND_TIMEOUT_MS,
        connectTimeout: 2_000,
        retryStrategy: (times) => Math.min(times * 200, 2_000),
      });
      client.on('error', () => undefined); // each user reports failures of its own commands
      this.clients.set(name, client);
    }
    return client;
  }

  onModuleDestroy(): void {
    for (const client of this.clients.values()) client.disconnect();
  }
}

@Global()
@Module({ providers: [RedisClients], exports: [RedisClients] })
export class RedisModule {}
