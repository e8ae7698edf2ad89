/** The wait view item `RUN#<runId> / WAIT#<correlationId>` <-> the contract's `Wait`. */
import type { Wait } from '@workflow/world';
import { assertItemFormat, formatStamp } from '../../schema/formats.js';
import { keys } from '../../schema/keys.js';
import { type Attrs, date, dropUndefined, epochMs, keysOf, num, str, toItem } from '../table/codec.js';

export function waitItem(w: Wait & { correlationId: string }): Attrs {
  return {
    ...formatStamp('records'),
    ...keysOf(keys.wait(w.runId, w.correlationId)),
    ...toItem({
      waitId: w.waitId,
      runId: w.runId,
      status: w.status,
      resumeAt: epochMs(w.resumeAt),
      completedAt: epochMs(w.completedAt),
      createdAt: epochMs(w.createdAt),
      updatedAt: epochMs(w.updatedAt),
      specVersion: w.specVersion,
    }),
  };
}

export function parseWait(it: Attrs): Wait {
  assertItemFormat(it, 'records', `wait view ${str(it, 'PK') ?? '?'} / ${str(it, 'SK') ?? '?'}`);
  return dropUndefined({
    waitId: str(it, 'waitId')!,
    runId: str(it, 'runId')!,
    status: str(it, 'status') as Wait['status'],
    resumeAt: date(it, 'resumeAt'),
    completedAt: date(it, 'completedAt'),
    createdAt: date(it, 'createdAt')!,
    updatedAt: date(it, 'updatedAt')!,
    specVersion: num(it, 'specVersion'),
  }) as Wait;
}
