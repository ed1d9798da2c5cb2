import { Inject, Injectable, Logger, OnModuleDestroy } from '@nestjs/common';
import pg from 'pg';
import type { AppConfig } from '../core/config/config.js';
import { APP_CONFIG } from '../core/config/config.module.js';
import type { WorkspaceEntity } from '../workspaces/workspace.entity.js';

/** Postgres channel a revocation is announced on, with the key's hash as payload, when it commits. */
export const API_KEY_REVOKED_CHANNEL = 'api_key_revoked';

// A safety net only: revocations reach every api process through LISTEN within milliseconds.
const TTL_MS = 10_000;
const MAX_ENTRIES = 10_000;
const RECONNECT_MS = [250, 500, 1_000, 2_000, 5_000];

export interface CachedKey {
  keyId: string;
  workspace: WorkspaceEntity;
  /** When last_used_at was last written for this key, by this process. */
  touchedAt: number;
}

interface Entry extends CachedKey {
  expiresAt: number;
}

/**
 * Authenticated keys by hash, so a request does not query Postgres for its key. Used only while
 * the LISTEN connection is up: any revocation committed meanwhile evicts its key here at once,
 * and a lost connection (notifications possibly missed) empties the cache until it is back. The
 * connection opens at the first lookup, so a process that serves no requests (the CLI) holds none.
 */
@Injectable()
export class ApiKeyCache implements OnModuleDestroy {
  private readonly logger = new Logger('ApiKeyCache');
  private readonly entries = new Map<string, Entry>();
  private client: pg.Client | null = null;
  private listening = false;
  private generation = 0;
  private reconnects = 0;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private started = false;
  private closed = false;

  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {}

  async onModuleDestroy(): Promise<void> {
    this.closed = true;
    this.listening = false;
    clearTimeout(this.reconnectTimer);
    const client = this.client;
    this.client = null;
    await client?.end().catch(() => undefined);
  }

  /** True while revocations are heard, the only time the cache answers. */
  get isListening(): boolean {
    return this.listening;
  }

  /** Read before the Postgres lookup; `set` ignores the result when an eviction happened since. */
  get stamp(): number {
    return this.generation;
  }

  get(hash: string): CachedKey | undefined {
    if (!this.started && !this.closed) {
      this.started = true;
      void this.listen();
    }
    if (!this.listening) return undefined;
    const entry = this.entries.get(hash);
    if (!entry) return undefined;
    if (entry.expiresAt > Date.now()) return entry;
    this.entries.delete(hash);
    return undefined;
  }

  set(hash: string, key: CachedKey, stamp: number): void {
    if (!this.listening || stamp !== this.generation) return;
    if (this.entries.size >= MAX_ENTRIES) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(hash, { ...key, expiresAt: Date.now() + TTL_MS });
  }

  evict(hash: string): void {
    this.generation++;
    this.entries.delete(hash);
  }

  private clear(): void {
    this.generation++;
    this.entries.clear();
  }

  private async listen(): Promise<void> {
    const client = new pg.Client({
      connectionString: this.config.databaseUrl,
      application_name: 'calc-webhooks',
      connectionTimeoutMillis: 5_000,
    });
    this.client = client;
    client.on('notification', (message) => {
      if (message.channel === API_KEY_REVOKED_CHANNEL && message.payload) this.evict(message.payload);
    });
    client.on('error', () => this.lost(client));
    client.on('end', () => this.lost(client));
    try {
      await client.connect();
      await client.query(`LISTEN ${API_KEY_REVOKED_CHANNEL}`);
      this.clear(); // whatever was revoked while not listening is forgotten with everything else
      this.listening = true;
      if (this.reconnects > 0) this.logger.log('Key cache back on: listening for revocations again');
      this.reconnects = 0;
    } catch {
      this.lost(client);
    }
  }

  private lost(client: pg.Client): void {
    if (client !== this.client || this.closed) return;
    if (this.listening) this.logger.warn('Key cache off until the LISTEN connection to Postgres is back');
    this.client = null;
    this.listening = false;
    this.clear();
    void client.end().catch(() => undefined);
    const delay = RECONNECT_MS[Math.min(this.reconnects++, RECONNECT_MS.length - 1)];
    this.reconnectTimer = setTimeout(() => void this.listen(), delay);
    this.reconnectTimer.unref();
  }
}
