import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { IsNull, Repository, type EntityManager } from 'typeorm';
import { newId } from '../core/ids.js';
import { WorkspaceEntity } from '../workspaces/workspace.entity.js';
import { generateApiKey, hashApiKey } from './api-key.js';
import { ApiKeyCache, type CachedKey } from './api-key-cache.js';
import { ApiKeyEntity } from './api-key.entity.js';

// last_used_at is a hint for operators, so it is written at most once a minute per key.
const LAST_USED_RESOLUTION_MS = 60_000;

export interface IssuedApiKey {
  key: string;
  apiKey: ApiKeyEntity;
}

@Injectable()
export class ApiKeysService {
  constructor(
    @InjectRepository(ApiKeyEntity) private readonly keys: Repository<ApiKeyEntity>,
    private readonly cache: ApiKeyCache,
  ) {}

  /** Issues a new key; the full key is returned once and only its hash is stored. */
  async issue(workspaceId: string, manager: EntityManager = this.keys.manager): Promise<IssuedApiKey> {
    const { key, prefix, hash } = generateApiKey();
    const apiKey = manager.create(ApiKeyEntity, {
      id: newId(),
      workspaceId,
      prefix,
      keyHash: hash,
      createdAt: new Date(),
      revokedAt: null,
      lastUsedAt: null,
    });
    await manager.insert(ApiKeyEntity, apiKey);
    return { key, apiKey };
  }

  /** Stores a key chosen by the caller (the documented development key of the demo seed). */
  async importKey(workspaceId: string, key: string): Promise<void> {
    await this.keys
      .createQueryBuilder()
      .insert()
      .values({ id: newId(), workspaceId, prefix: key.slice(0, 12), keyHash: hashApiKey(key), createdAt: new Date() })
      .orIgnore()
      .execute();
  }

  list(workspaceId: string): Promise<ApiKeyEntity[]> {
    return this.keys.find({ where: { workspaceId }, order: { createdAt: 'ASC', id: 'ASC' } });
  }

  /** Revokes by prefix; returns the key, or null when the workspace has no such active key. */
  async revoke(workspaceId: string, prefix: string): Promise<ApiKeyEntity | null> {
    const key = await this.keys.findOne({ where: { workspaceId, prefix, revokedAt: IsNull() } });
    if (!key) return null;
    key.revokedAt = new Date();
    await this.keys.update({ id: key.id }, { revokedAt: key.revokedAt });
    // Other processes hear of it from the database trigger (NOTIFY); this one needs no round trip.
    this.cache.evict(key.keyHash);
    return key;
  }

  /** The workspace of the key with this hash (see presentedKeyHash), or null for an unknown or revoked key. */
  /** The key's workspace and the key's id (the actor an audit event names), or null for an unknown or revoked key. */
  /** Whether the key of this hash authenticated in this process and is not revoked since (no query). */
  isKnown(hash: string): boolean {
    return this.cache.get(hash) !== undefined;
  }

  async authenticate(hash: string): Promise<{ workspace: WorkspaceEntity; keyId: string } | null> {
    const cached = this.cache.get(hash);
    if (cached) {
      this.touch(cached);
      return { workspace: cached.workspace, keyId: cached.keyId };
    }
    const stamp = this.cache.stamp;
    // Two lookups, on a cache miss only: a key is then served from the cache until it is revoked.
    const found = await this.keys.findOne({
      select: { id: true, workspaceId: true, lastUsedAt: true },
      where: { keyHash: hash, revokedAt: IsNull() },
    });
    const workspace = found && (await this.keys.manager.findOneBy(WorkspaceEntity, { id: found.workspaceId }));
    if (!found || !workspace) return null;
    const key: CachedKey = { keyId: found.id, workspace, touchedAt: found.lastUsedAt?.getTime() ?? 0 };
    this.touch(key);
    this.cache.set(hash, key, stamp);
    return { workspace: key.workspace, keyId: key.keyId };
  }

  private touch(key: CachedKey): void {
    const now = Date.now();
    if (now - key.touchedAt < LAST_USED_RESOLUTION_MS) return;
    key.touchedAt = now;
    void this.keys.update({ id: key.keyId }, { lastUsedAt: new Date(now) }).catch(() => undefined);
  }
}
