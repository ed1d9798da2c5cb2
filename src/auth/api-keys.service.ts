import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { IsNull, Repository, type EntityManager } from 'typeorm';
import { newId } from '../core/ids.js';
import { WorkspaceEntity } from '../workspaces/workspace.entity.js';
import { generateApiKey, hashApiKey, looksLikeApiKey } from './api-key.js';
import { ApiKeyEntity } from './api-key.entity.js';

// last_used_at is a hint for operators, so it is written at most once a minute per key.
const LAST_USED_RESOLUTION_MS = 60_000;

export interface IssuedApiKey {
  key: string;
  apiKey: ApiKeyEntity;
}

@Injectable()
export class ApiKeysService {
  constructor(@InjectRepository(ApiKeyEntity) private readonly keys: Repository<ApiKeyEntity>) {}

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
    return key;
  }

  /** The workspace a presented key belongs to, or null for an unknown or revoked key. */
  async authenticate(presented: string): Promise<WorkspaceEntity | null> {
    if (!looksLikeApiKey(presented)) return null;
    const row = await this.keys
      .createQueryBuilder('k')
      .innerJoinAndMapOne('k.workspace', WorkspaceEntity, 'w', 'w.id = k.workspace_id')
      .where('k.key_hash = :hash AND k.revoked_at IS NULL', { hash: hashApiKey(presented) })
      .getOne();
    if (!row) return null;
    this.touch(row);
    return (row as ApiKeyEntity & { workspace: WorkspaceEntity }).workspace;
  }

  private touch(key: ApiKeyEntity): void {
    const now = Date.now();
    if (key.lastUsedAt && now - key.lastUsedAt.getTime() < LAST_USED_RESOLUTION_MS) return;
    void this.keys.update({ id: key.id }, { lastUsedAt: new Date(now) }).catch(() => undefined);
  }
}
