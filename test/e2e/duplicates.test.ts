/**
 * Duplicate delivery through SQS: every message is sent twice (fault injection on the SQS
 * client), so the World's real consumer receives two copies of everything, usually in one batch.
 * Runs must complete with one terminal event per step and per run, and every step body runs once:
 * the consumer never hands two copies of one message to the flow route at the same time (its
 * in-process guard; across processes the step lease does it, see duplicates-parallel.test.ts),
 * and a later copy replays what the first committed.
 */
import { duplicateDeliveryCases } from '../helpers/duplicate-cases.js';

duplicateDeliveryCases('sqs', { bodiesRunOnce: true });
