import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { CalculatorEntity } from '../calculators/calculator.entity.js';
import { SubmissionEntity } from '../submissions/submission.entity.js';
import { WebhookEntity } from '../webhooks/webhook.entity.js';
import { WorkspaceEntity } from '../workspaces/workspace.entity.js';
import { AttemptClaims } from './store/attempt-claims.js';
import { AttemptRecords } from './store/attempt-records.js';
import { DeliveryAttemptService } from './engine/delivery-attempt.service.js';
import { Admission } from './engine/admission/admission.js';
import { HostWakesModule } from './host-wakes.module.js';
import { OperationalEventsModule } from '../operational-webhooks/operational-events.module.js';
import { DeliveryStoreModule } from './store/delivery-store.module.js';
import { DeliveryAttemptEntity, DeliveryEntity } from './delivery.entity.js';
import { DeliveryPartitionUpkeep } from './scheduled/delivery-partition-upkeep.js';
import { DeliveryRetention } from './scheduled/delivery-retention.js';
import { DeliverySweeper } from './scheduled/delivery.sweeper.js';
import { DeliveryWorker } from './engine/delivery.worker.js';
import { RecoveryRunner } from './recovery/recovery.runner.js';
import { RecoveryEntity } from './recovery/recovery.entity.js';
import { SSRF_RESOLVER, WebhookSender } from './engine/webhook-sender.js';

/** The consumer side: only processes that deliver (dist/worker.js, or the api with WORKER_ENABLED) import it. */
@Module({
  imports: [
    TypeOrmModule.forFeature([DeliveryEntity, DeliveryAttemptEntity, RecoveryEntity]),
    // The worker process has no other feature module: the webhook it reads before each attempt, and the
    // tables its entities' foreign keys name, are registered here too.
    TypeOrmModule.forFeature([WebhookEntity, SubmissionEntity, CalculatorEntity, WorkspaceEntity]),
    HostWakesModule,
    DeliveryStoreModule,
    OperationalEventsModule, // the attempt's record and recoveries report to operational webhooks
  ],
  providers: [
    { provide: SSRF_RESOLVER, useValue: undefined },
    WebhookSender,
    AttemptClaims,
    AttemptRecords,
    DeliveryAttemptService,
    Admission,
    DeliveryWorker,
    DeliverySweeper,
    RecoveryRunner,
    DeliveryRetention,
    DeliveryPartitionUpkeep,
  ],
})
export class DeliveryWorkerModule {}
