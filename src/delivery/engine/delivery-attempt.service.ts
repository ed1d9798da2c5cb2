import { Inject, Injectable, Logger } from '@nestjs/common';
import { SpanStatusCode, type Span } from '@opentelemetry/api';
import type { AppConfig } from '../../core/config/config.js';
import { APP_CONFIG } from '../../core/config/config.module.js';
import { isCuid2 } from '../../core/ids.js';
import { inSpan, SpanKind } from '../../core/tracing/tracing.js';
import { DeliveryMetrics } from '../../metrics/delivery.metrics.js';
import { AttemptClaims, type AttemptContext } from '../store/attempt-claims.js';
import { decideOutcome, type AttemptOutcome } from './attempt-outcome.js';
import { AttemptRecords } from '../store/attempt-records.js';
import { DeliveryStore } from '../store/delivery-store.js';
import { buildPayload } from '../delivery-payload.js';
import { scheduleDelaysMs } from '../retry-schedule.js';
import type { TraceCarrier } from '../../core/tracing/tracing.js';
import { signPayload } from './signing.js';
import { WebhookSender, type Connection, type Outgoing, type SendResult } from './webhook-sender.js';

// Each try takes another connection: a pool of stale kept-alive ones empties after a few.
const MAX_UNSENT_TRIES = 3;

/** What one run of a job came to; `busy`: another worker is attempting it, so look again later. */
export type RunResult =
  (AttemptOutcome & { send: SendResult }) | { status: 'cancelled' } | { status: 'skipped' } | { status: 'busy' };

/** A due delivery a host's drain attempts (its pick's row). */
export interface DueDelivery {
  deliveryId: string;
  /** Names its partition (DESIGN 9). */
  createdAt: Date;
  trigger: 'scheduled' | 'manual';
  host: string;
  url: string;
  webhookId: string;
  workspaceId: string;
  /** W3C trace context of the request that made it, so each attempt joins its trace; null when tracing was off. */
  trace: TraceCarrier | null;
}

/**
 * One attempt of one delivery: connect, claim (the removal fence), sign and write, release the fence,
 * wait for the receiver, record. No Postgres connection is held while the receiver thinks.
 */
@Injectable()
export class DeliveryAttemptService {
  private readonly logger = new Logger('DeliveryAttempt');

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly sender: WebhookSender,
    private readonly claims: AttemptClaims,
    private readonly records: AttemptRecords,
    private readonly metrics: DeliveryMetrics,
    private readonly store: DeliveryStore,
  ) {}

  /** `answered` runs once the receiver has answered (or the send failed), before the attempt is recorded. */
  async run(job: DueDelivery, answered: (result: SendResult) => void = () => undefined): Promise<RunResult> {
    if (!isCuid2(job.deliveryId)) return { status: 'skipped' };
    const attributes = {
      'delivery.id': job.deliveryId,
      'delivery.trigger': job.trigger,
      'delivery.destination': job.host,
      'webhook.id': job.webhookId,
      'workspace.id': job.workspaceId,
    };
    // A child of the request that made it (the submission's trace) when it kept one; otherwise a trace of its own.
    const parent = job.trace ?? {};
    return inSpan(
      'delivery.attempt',
      attributes,
      async (span) => {
        // A kept-alive connection found closed before anything went out made no attempt: again, on a new one.
        for (let tries = 1; ; tries++) {
          const result = await this.attempt(job, tries < MAX_UNSENT_TRIES, answered);
          if (result === 'unsent') continue;
          span.setAttribute('delivery.outcome', result.status);
          return result;
        }
      },
      { kind: SpanKind.CONSUMER, parent },
    );
  }

  /** One claim and send; 'unsent' (the lease given back, nothing recorded) when `mayRetry` and nothing went out. */
  private async attempt(
    { deliveryId, createdAt, trigger, url }: DueDelivery,
    mayRetry: boolean,
    answered: (result: SendResult) => void,
  ): Promise<RunResult | 'unsent'> {
    // Connect first: a host that never accepts holds a socket and a slot, not the webhook's lock.
    const connection = await inSpan('delivery.connect', {}, () => this.sender.connect(url));
    const claim = await inSpan('delivery.claim', {}, async (span) => {
      const claimed = await this.claims.claim(deliveryId, createdAt);
      span.setAttribute('delivery.claim', claimed.outcome);
      return claimed;
    }).catch((error: unknown) => {
      if (connection.ok) connection.abandon();
      throw error;
    });
    if (claim.outcome !== 'claimed') {
      if (connection.ok) connection.abandon();
      if (claim.outcome === 'cancelled') this.metrics.recordCancelled();
      return claim.outcome === 'ended' || claim.outcome === 'skipped'
        ? { status: 'skipped' }
        : { status: claim.outcome };
    }
    const startedAt = new Date();
    const result = await inSpan(
      'delivery.send',
      { 'http.request.method': 'POST' },
      (span) => this.send(span, connection, deliveryId, claim),
      { kind: SpanKind.CLIENT },
    );
    if (result.unsent && mayRetry) {
      await this.store.releaseLease(deliveryId, claim.context.delivery_created_at);
      return 'unsent';
    }
    answered(result);
    return this.record(deliveryId, trigger, claim.context, startedAt, result);
  }

  /** No trace header goes to the receiver: only the status and the error text are on the span. */
  private async send(
    span: Span,
    connection: Connection,
    deliveryId: string,
    claim: { context: AttemptContext; written: () => void },
  ): Promise<SendResult> {
    let result: SendResult;
    if (connection.ok) {
      result = await connection.send(this.outgoing(deliveryId, claim.context), claim.written);
    } else {
      claim.written();
      result = connection.result;
    }
    if (result.statusCode !== null) span.setAttribute('http.response.status_code', result.statusCode);
    if (!result.ok)
      span.setStatus({ code: SpanStatusCode.ERROR, message: result.error ?? `HTTP ${result.statusCode}` });
    return result;
  }

  private async record(
    deliveryId: string,
    trigger: DueDelivery['trigger'],
    ctx: AttemptContext,
    startedAt: Date,
    result: SendResult,
  ): Promise<RunResult> {
    const attemptNumber = ctx.attempt_count + 1;
    const finishedAt = new Date();
    const schedule = scheduleDelaysMs(ctx.settings.retrySchedule, this.config);
    const outcome = decideOutcome(result, attemptNumber, ctx.max_attempts, schedule);
    const recorded = await inSpan('delivery.record', { 'delivery.attempt_number': attemptNumber }, () =>
      this.records.record({
        deliveryId,
        deliveryCreatedAt: ctx.delivery_created_at,
        attemptNumber,
        trigger,
        startedAt,
        durationMs: result.durationMs,
        statusCode: result.statusCode,
        responseExcerpt: result.responseExcerpt,
        error: outcome.status === 'succeeded' ? null : outcome.reason,
        succeeded: result.ok,
        status: outcome.status,
        nextAttemptAt: outcome.status === 'pending' ? new Date(finishedAt.getTime() + outcome.delayMs) : null,
        finishedAt,
      }),
    );
    this.metrics.recordAttempt(outcome.status, result.durationMs);
    this.logger.log({
      msg: 'delivery attempt',
      deliveryId,
      webhookId: ctx.webhook_id,
      attempt: attemptNumber,
      statusCode: result.statusCode,
      outcome: recorded ?? 'superseded',
      durationMs: result.durationMs,
      ...(result.error ? { error: result.error } : {}),
    });
    if (recorded === 'cancelled') return { status: 'cancelled' };
    if (recorded === null || recorded === 'skipped') return { status: 'skipped' };
    return { ...outcome, send: result };
  }

  private outgoing(deliveryId: string, ctx: AttemptContext): Outgoing {
    const body = JSON.stringify(
      ctx.event ??
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
    const secrets = ctx.previous_secret ? [ctx.secret, ctx.previous_secret] : [ctx.secret];
    const signed = signPayload(secrets, deliveryId, Math.floor(Date.now() / 1000), body);
    const { headers, timeoutMs } = ctx.settings;
    // The webhook's own headers first, ours after: none of its can replace one of ours.
    return { body, headers: { ...headers, ...signed }, timeoutMs: timeoutMs ?? this.config.deliveryTimeoutMs };
  }
}
