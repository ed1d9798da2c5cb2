import { Module } from '@nestjs/common';
import { AuditEventsModule } from '../audit/audit-events.module.js';
import { SubmissionEntity } from '../submissions/submission.entity.js';
import { WebhookCalculatorEntity } from '../webhooks/webhook.entity.js';
import { TypeOrmModule } from '@nestjs/typeorm';
import { WebhooksModule } from '../webhooks/webhooks.module.js';
import { DeliveriesController } from './log/deliveries.controller.js';
import { DeliveryLogService } from './log/delivery-log.service.js';
import { HostWakesModule } from './host-wakes.module.js';
import { DeliveryStoreModule } from './store/delivery-store.module.js';
import { DeliveryAttemptEntity, DeliveryEntity } from './delivery.entity.js';
import { RecoveriesController } from './recovery/recoveries.controller.js';
import { RecoveriesService } from './recovery/recoveries.service.js';
import { RecoveryEntity } from './recovery/recovery.entity.js';
import { TestEventController } from './test-event/test-event.controller.js';
import { TestEventService } from './test-event/test-event.service.js';
import { WorkspaceDeliveriesController } from './log/workspace-deliveries.controller.js';

/** The API side of delivery: the delivery logs, manual redelivery, test events and recovery. */
@Module({
  imports: [
    TypeOrmModule.forFeature([
      DeliveryEntity,
      DeliveryAttemptEntity,
      RecoveryEntity,
      SubmissionEntity,
      WebhookCalculatorEntity,
    ]),
    HostWakesModule,
    DeliveryStoreModule,
    WebhooksModule,
    AuditEventsModule, // @Audited routes
  ],
  controllers: [DeliveriesController, WorkspaceDeliveriesController, TestEventController, RecoveriesController],
  providers: [DeliveryLogService, TestEventService, RecoveriesService],
})
export class DeliveryModule {}
