import { Inject, Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { PoolClient, QueryResult } from 'pg';
import { DataSource } from 'typeorm';
import type { AppConfig } from '../core/config/config.js';
import { APP_CONFIG } from '../core/config/config.module.js';
import { poolOf, prepared, queryPreparedOn } from '../core/database/prepared.js';
import { isCuid2, newId } from '../core/ids.js';
import { DeliveryMetrics } from '../metrics/delivery.metrics.js';
import { decideOutcome, type AttemptOutcome } from './attempt-outcome.js';
import { buildPayload } from './delivery-payload.js';
import type { DeliverJobData } from './delivery-queue.js';
import { signPayload } from './signing.js';
import { WebhookSender, type SendResult } from './webhook-sender.js';

export type RunResult = AttemptOutcome | { status: 'cancelled' } | { status: 'skipped' };

interface AttemptContext {
  attempt_count: number;
  max_attempts: number;
  webhook_id: string;
  url: string;
  secret: string;
  webhook_removed: boolean;
  submission_id: string;
  calculator_id: string;
  finished: boolean;
  data: Record<string, unknown>;
  meta: Record<string, unknown>;
  created_at: Date;
  updated_at: Date;
}

// BEGIN, then the webhook's shared lock and a read of the pending delivery with a snapshot from
// after the lock (see the begin_delivery_attempt migration), so a webhook removed meanwhile is seen
// as removed: one round trip. The id is inlined (a simple query takes no parameters), so it must be
// a CUID2, and is quoted all the same.
const beginAttempt = (client: PoolClient, deliveryId: string) =>
  `BEGIN; SELECT * FROM begin_delivery_attempt(${client.escapeLiteral(deliveryId)})`;

const RECORD_ATTEMPT = prepared(
  'delivery_record_attempt',
  `
  WITH attempt AS (
    INSERT INTO delivery_attempts (id, delivery_id, attempt_number, trigger, started_at, duration_ms, status_code,
                                   response_body, error, succeeded)
    VALUES ($2, $1, $3, $4, $5, $6, $7, $8, $9, $10)
  )
  UPDATE deliveries SET status = $11, attempt_count = $3, next_attempt_at = $12, last_attempt_at = $5,
    last_status_code = $7, last_error = $9, completed_at = $13, updated_at = $14
  WHERE id = $1`,
);

const CANCEL_DELIVERY = prepared(
  'delivery_cancel',
  `UPDATE deliveries SET status = 'cancelled', next_attempt_at = NULL, completed_at = clock_timestamp(),
     updated_at = clock_timestamp()
   WHERE id = $1`,
);

/** Runs one attempt of one delivery: re-read, lock, sign, send, record. */
@Injectable()
export class DeliveryAttemptService {
  private readonly logger = new Logger('DeliveryAttempt');

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly sender: WebhookSender,
    private readonly metrics: DeliveryMetrics,
  ) {}

  async run(deliveryId: string, trigger: DeliverJobData['trigger']): Promise<RunResult> {
    if (!isCuid2(deliveryId)) return { status: 'skipped' };
    const client = await poolOf(this.dataSource).connect();
    let broken: Error | undefined;
    // A checked-out client whose connection dies emits 'error'; unheard, it would crash the worker
    // (Postgres restarting mid-attempt). The pending query fails too, and the client is discarded.
    const onError = (error: Error) => (broken = error);
    client.on('error', onError);
    try {
      const result = await this.attemptInTransaction(client, deliveryId, trigger);
      await client.query('COMMIT');
      return result;
    } catch (error) {
      // A connection that cannot even roll back is closed rather than handed to the next attempt.
      await client.query('ROLLBACK').catch((rollbackError: Error) => (broken = rollbackError));
      throw error;
    } finally {
      client.off('error', onError);
      client.release(broken);
    }
  }

  private async attemptInTransaction(
    client: PoolClient,
    deliveryId: string,
    trigger: DeliverJobData['trigger'],
  ): Promise<RunResult> {
    const [, begun] = (await client.query(beginAttempt(client, deliveryId))) as unknown as [
      QueryResult,
      QueryResult<AttemptContext>,
    ];
    const ctx = begun.rows[0];
    if (!ctx) return { status: 'skipped' };
    if (ctx.webhook_removed) {
      await queryPreparedOn(client, CANCEL_DELIVERY, [deliveryId]);
      this.metrics.recordCancelled();
      return { status: 'cancelled' };
    }
    const attemptNumber = ctx.attempt_count + 1;
    const startedAt = new Date();
    const result = await this.send(deliveryId, ctx);
    const finishedAt = new Date();
    const outcome = decideOutcome(result, attemptNumber, ctx.max_attempts, this.config.retryScheduleMs);
    await queryPreparedOn(client, RECORD_ATTEMPT, [
      deliveryId,
      newId(),
      attemptNumber,
      trigger,
      startedAt,
      result.durationMs,
      result.statusCode,
      result.responseExcerpt,
      outcome.status === 'succeeded' ? null : outcome.reason,
      result.ok,
      outcome.status,
      outcome.status === 'pending' ? new Date(finishedAt.getTime() + outcome.delayMs) : null,
      outcome.status === 'pending' ? null : finishedAt,
      finishedAt,
    ]);
    this.metrics.recordAttempt(outcome.status, result.durationMs);
    this.logger.log({
      msg: 'delivery attempt',
      deliveryId,
      webhookId: ctx.webhook_id,
      attempt: attemptNumber,
      statusCode: result.statusCode,
      outcome: outcome.status,
      durationMs: result.durationMs,
      ...(result.error ? { error: result.error } : {}),
    });
    return outcome;
  }

  private send(deliveryId: string, ctx: AttemptContext): Promise<SendResult> {
    const body = JSON.stringify(
      buildPayload(ctx.webhook_id, {
        id: ctx.submission_id,
        calculatorId: ctx.calculator_id,
        finished: ctx.finished,
        data: ctx.data,
        meta: ctx.meta,
        createdAt: ctx.created_at,
        updatedAt: ctx.updated_at,
      }),
    );
    const headers = signPayload(ctx.secret, deliveryId, Math.floor(Date.now() / 1000), body);
    return this.sender.send(ctx.url, body, { ...headers });
  }
}
