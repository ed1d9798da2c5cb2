import { Module } from '@nestjs/common';
import { AttemptClaims } from './store/attempt-claims.js';
import { AttemptRecords } from './store/attempt-records.js';
import { DeliveryAttemptService } from './engine/delivery-attempt.service.js';
import { DestinationLimiter } from './engine/destination-limiter.js';
import { DeliveryQueueModule } from './delivery-queue.module.js';
import { DeliveryStoreModule } from './store/delivery-store.module.js';
import { DeliveryRetention } from './scheduled/delivery-retention.js';
import { DeliverySweeper } from './scheduled/delivery.sweeper.js';
import { DeliveryWorker } from './engine/delivery.worker.js';
import { RecoveryRunner } from './recovery/recovery.runner.js';
import { SSRF_RESOLVER, WebhookSender } from './engine/webhook-sender.js';

/** The consumer side: only processes that deliver (dist/worker.js, or the api with WORKER_ENABLED) import it. */
@Module({
  imports: [DeliveryQueueModule, DeliveryStoreModule],
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
