import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { CalculatorSubmissionCounterEntity } from './calculator-submission-counter.entity.js';
import { CalculatorEntity } from './calculator.entity.js';
import { CalculatorsController } from './calculators.controller.js';
import { CalculatorsService } from './calculators.service.js';

@Module({
  imports: [TypeOrmModule.forFeature([CalculatorEntity, CalculatorSubmissionCounterEntity])],
  controllers: [CalculatorsController],
  providers: [CalculatorsService],
  exports: [CalculatorsService],
})
export class CalculatorsModule {}
