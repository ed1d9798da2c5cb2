import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { DataSource, IsNull, Repository } from 'typeorm';
import { IDEMPOTENCY_CLAIM, IDEMPOTENCY_PURGE_BATCH } from './idempotency-key.statements.js';
import { ScheduledJob } from '../scheduling/scheduled-job.js';
import type { IdempotentRequest } from './idempotency-key.js';
import { IdempotencyKeyEntity } from './idempotency-key.entity.js';

/** How long the first answer is kept (DESIGN 7.6). */
export const KEEP_MS = 24 * 60 * 60 * 1000;
/** A claim with no answer after this long belongs to a process that died: a repeat takes it over. */
export const ABANDONED_AFTER_MS = 60_000;
const PURGE_BATCH = 500;
const PURGE_MAX_BATCHES = 20;
const PURGE_EVERY_MS = 60_000;

/** An answer as kept: the status and the JSON body (null for an empty one). */
export interface KeptAnswer {
  statusCode: number;
  body: string | null;
}

/** The idempotency_keys rows: claim, answer, release, and the purge of expired ones. */
@Injectable()
export class IdempotencyKeysService {
  constructor(
    private readonly dataSource: DataSource,
    @InjectRepository(IdempotencyKeyEntity) private readonly keys: Repository<IdempotencyKeyEntity>,
  ) {}

  /** The claim's token when this request now owns the key, null when another request holds or answered it. */
  async claim(request: IdempotentRequest): Promise<Date | null> {
    const { workspaceId, key, method, path, bodyHash } = request;
    const rows = await this.dataSource.query<{ created_at: Date }[]>(IDEMPOTENCY_CLAIM, [
      workspaceId,
      key,
      method,
      path,
      bodyHash,
      KEEP_MS,
      ABANDONED_AFTER_MS,
    ]);
    return rows[0]?.created_at ?? null;
  }

  find(workspaceId: string, key: string): Promise<IdempotencyKeyEntity | null> {
    return this.keys.findOneBy({ workspaceId, key });
  }

  /** Keeps the answer of the claim `claimedAt` (not of a later takeover). */
  async answer(request: IdempotentRequest, claimedAt: Date, answer: KeptAnswer): Promise<void> {
    await this.keys.update(
      { workspaceId: request.workspaceId, key: request.key, createdAt: claimedAt, statusCode: IsNull() },
      { statusCode: answer.statusCode, responseBody: answer.body, completedAt: new Date() },
    );
  }

  /** Gives the key back unanswered, so the client's retry runs the request again. */
  async release(request: IdempotentRequest, claimedAt: Date): Promise<void> {
    await this.keys.delete({
      workspaceId: request.workspaceId,
      key: request.key,
      createdAt: claimedAt,
      statusCode: IsNull(),
    });
  }

  /** Deletes expired keys in small batches, at most PURGE_MAX_BATCHES of them a run. */
  @ScheduledJob({ name: 'purge-expired-idempotency-keys', every: () => PURGE_EVERY_MS })
  async purgeExpired(): Promise<number> {
    let deleted = 0;
    for (let batch = 0; batch < PURGE_MAX_BATCHES; batch++) {
      const [, count] = await this.dataSource.query<[unknown, number]>(IDEMPOTENCY_PURGE_BATCH, [PURGE_BATCH]);
      deleted += count;
      if (count < PURGE_BATCH) break;
    }
    return deleted;
  }
}
