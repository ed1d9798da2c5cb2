import { Module } from '@nestjs/common';
import { WebhooksModule } from '../webhooks/webhooks.module.js';
import { DeliveriesController } from './deliveries.controller.js';
import { DeliveryLogService } from './delivery-log.service.js';
import { DeliveryQueueModule } from './delivery-queue.module.js';

/** The API side of delivery: the delivery log and manual redelivery. */
@Module({
  imports: [DeliveryQueueModule, WebhooksModule],
  controllers: [DeliveriesController],
  providers: [DeliveryLogService],
})
export class DeliveryModule {}
