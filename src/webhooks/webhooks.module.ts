import { Module } from '@nestjs/common';
import { AuditEventsModule } from '../audit/audit-events.module.js';
import { TypeOrmModule } from '@nestjs/typeorm';
import { CalculatorsModule } from '../calculators/calculators.module.js';
import { HostWakesModule } from '../delivery/host-wakes.module.js';
import { DeliveryStoreModule } from '../delivery/store/delivery-store.module.js';
import { WebhookCalculatorEntity, WebhookEntity, WebhookTriggerEntity } from './webhook.entity.js';
import { WebhookFilterCounterEntity } from './webhook-filter-counter.entity.js';
import { OperationalEventsModule } from '../operational-webhooks/operational-events.module.js';
import { WebhooksController } from './webhooks.controller.js';
import { WebhookHealthService } from './webhook-health.service.js';
import { WebhooksService } from './webhooks.service.js';

@Module({
  imports: [
    TypeOrmModule.forFeature([
      WebhookEntity,
      WebhookCalculatorEntity,
      WebhookTriggerEntity,
      WebhookFilterCounterEntity,
    ]),
    CalculatorsModule,
    HostWakesModule,
    DeliveryStoreModule,
    AuditEventsModule, // @Audited routes
    OperationalEventsModule, // disable and enable are reported
  ],
  controllers: [WebhooksController],
  providers: [WebhooksService, WebhookHealthService],
  exports: [WebhooksService],
})
export class WebhooksModule {}
