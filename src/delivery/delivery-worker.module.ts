import { Module } from '@nestjs/common';
import { AttemptClaims } from './attempt-claims.js';
import { AttemptRecords } from './attempt-records.js';
import { DeliveryAttemptService } from './delivery-attempt.service.js';
import { DestinationLimiter } from './destination-limiter.js';
import { DeliveryQueueModule } from './delivery-queue.module.js';
import { DeliveryRetention } from './delivery-retention.js';
import { DeliverySweeper } from './delivery.sweeper.js';
import { DeliveryWorker } from './delivery.worker.js';
import { RecoveryRunner } from './recovery.runner.js';
import { SSRF_RESOLVER, WebhookSender } from './webhook-sender.js';

/** The consumer side: only processes that deliver (dist/worker.js, or the api with WORKER_ENABLED) import it. */
@Module({
  imports: [DeliveryQueueModule],
  providers: [
    { provide: SSRF_RESOLVER, useValue: undefined },
    WebhookSender,
    AttemptClaims,
    AttemptRecords,
    DeliveryAttemptService,
    DestinationLimiter,
    DeliveryWorker,
    DeliverySweeper,
    RecoveryRunner,
    DeliveryRetention,
  ],
})
export class DeliveryWorkerModule {}
