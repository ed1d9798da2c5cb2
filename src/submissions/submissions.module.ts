import { Module } from '@nestjs/common';
import { DeliveryQueueModule } from '../delivery/delivery-queue.module.js';
import { DeliveryStoreModule } from '../delivery/store/delivery-store.module.js';
import { SubmissionsController } from './submissions.controller.js';
import { SubmissionsService } from './submissions.service.js';

@Module({
  imports: [DeliveryQueueModule, DeliveryStoreModule],
  controllers: [SubmissionsController],
  providers: [SubmissionsService],
  exports: [SubmissionsService],
})
export class SubmissionsModule {}
