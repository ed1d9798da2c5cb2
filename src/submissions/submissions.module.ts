import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { HostWakesModule } from '../delivery/host-wakes.module.js';
import { DeliveryStoreModule } from '../delivery/store/delivery-store.module.js';
import { SubmissionEntity } from './submission.entity.js';
import { SubmissionsController } from './submissions.controller.js';
import { SubmissionsService } from './submissions.service.js';

@Module({
  imports: [TypeOrmModule.forFeature([SubmissionEntity]), HostWakesModule, DeliveryStoreModule],
  controllers: [SubmissionsController],
  providers: [SubmissionsService],
  exports: [SubmissionsService],
})
export class SubmissionsModule {}
