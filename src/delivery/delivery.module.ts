import { Module } from '@nestjs/common';
import { WebhooksModule } from '../webhooks/webhooks.module.js';
import { DeliveriesController } from './deliveries.controller.js';
import { DeliveryLogService } from './delivery-log.service.js';
import { DeliveryQueueModule } from './delivery-queue.module.js';
import { RecoveriesController } from './recoveries.controller.js';
import { RecoveriesService } from './recoveries.service.js';
import { TestEventController } from './test-event.controller.js';
import { TestEventService } from './test-event.service.js';
import { WorkspaceDeliveriesController } from './workspace-deliveries.controller.js';

/** The API side of delivery: the delivery logs, manual redelivery, test events and recovery. */
@Module({
  imports: [DeliveryQueueModule, WebhooksModule],
  controllers: [DeliveriesController, WorkspaceDeliveriesController, TestEventController, RecoveriesController],
  providers: [DeliveryLogService, TestEventService, RecoveriesService],
})
export class DeliveryModule {}
