/**
 * What the `EveWorldAws` construct shows an operator: a CloudWatch dashboard over the World's own
 * EMF metrics (src/telemetry/metrics.ts: namespace `EveWorldAws`, dimension `Queue`) and the
 * built-in SQS and Lambda metrics; alarms on DLQ depth, oldest-message age, worker and sweeper
 * errors, and on the World's own metrics (dead-letters, breaker opens, sustained throttling), with
 * the optional SNS topic as their action. Tracing (`tracing`) is set on the functions themselves
 * (./host.ts, ./worker.ts).
 */
import { Duration } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as cwActions from 'aws-cdk-lib/aws-cloudwatch-actions';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import { DEFAULT_NAMESPACE, type MetricName } from '../telemetry/metrics.js';
import type { EveWorldAwsProps } from './props.js';

export interface ObservedStack {
  readonly queue: sqs.IQueue;
  readonly deadLetterQueue: sqs.IQueue;
  /** The SQS worker; absent when the host consumes the queue (its panels and alarm then show the host). */
  readonly workerFunction?: lambda.IFunction;
  readonly hostFunction: lambda.IFunction;
}

/** One of the World's metrics for this stack's queue. */
function worldMetric(
  queue: sqs.IQueue,
  name: MetricName,
  statistic = 'Sum',
  period = Duration.minutes(1),
  label?: string,
): cloudwatch.Metric {
  return new cloudwatch.Metric({
    namespace: DEFAULT_NAMESPACE,
    metricName: name,
    dimensionsMap: { Queue: queue.queueName },
    statistic,
    period,
    ...(label ? { label } : {}),
  });
}

const graph = (title: string, left: cloudwatch.IMetric[], right: cloudwatch.IMetric[] = [], width = 8) =>
  new cloudwatch.GraphWidget({ title, left, right, width, height: 6 });

function worldDashboard(scope: Construct, id: string, s: ObservedStack): cloudwatch.Dashboard {
  const w = (name: MetricName, statistic?: string, label?: string) =>
    worldMetric(s.queue, name, statistic, Duration.minutes(1), label);
  const oneMinute = { period: Duration.minutes(1) };
  const maxOf = (label: string) => ({ ...oneMinute, statistic: 'Maximum', label });
  const perSecond = (id: string, name: MetricName, label: string) =>
    new cloudwatch.MathExpression({
      expression: `${id} / PERIOD(${id})`,
      usingMetrics: { [id]: w(name) },
      label,
      ...oneMinute,
    });
  const dashboard = new cloudwatch.Dashboard(scope, id, { defaultInterval: Duration.hours(3) });
  dashboard.addWidgets(
    graph('Runs started / completed / failed', [
      w('RunsStarted'),
      w('RunsCompleted'),
      w('RunsFailed'),
      w('RunsCancelled'),
    ]),
    graph('Steps per second', [
      perSecond('completed', 'StepsCompleted', 'steps/s'),
      perSecond('failed', 'StepsFailed', 'failed steps/s'),
    ]),
    graph('Delivery latency, enqueue to handled (ms)', [
      w('DeliveryLatency', 'p50', 'p50'),
      w('DeliveryLatency', 'p99', 'p99'),
      w('QueueAge', 'p99', 'queue age p99'),
    ]),
  );
  dashboard.addWidgets(
    graph(
      'Queue depth and oldest message (s)',
      [
        s.queue.metricApproximateNumberOfMessagesVisible(maxOf('visible')),
        s.queue.metricApproximateNumberOfMessagesNotVisible(maxOf('in flight')),
      ],
      [s.queue.metricApproximateAgeOfOldestMessage(maxOf('oldest (s)'))],
    ),
    graph('Dead-letter queue', [
      s.deadLetterQueue.metricApproximateNumberOfMessagesVisible(maxOf('DLQ depth')),
      w('DeliveriesDeadLettered', 'Sum', 'dead-lettered'),
    ]),
    graph('Deliveries by outcome', [
      w('DeliveriesAcked', 'Sum', 'acked'),
      w('DeliveriesRetried', 'Sum', 'retried'),
      w('DeliveriesDeferred', 'Sum', 'deferred'),
      w('DeliveriesRefusedCopy', 'Sum', 'refused copy'),
    ]),
  );
  // The queue's consumer: the worker, or the host when it consumes the queue itself.
  const consumer = s.workerFunction ?? s.hostFunction;
  const who = s.workerFunction ? 'worker' : 'host';
  const consumerDuration = s.workerFunction
    ? [
        s.workerFunction.metricDuration({ ...oneMinute, statistic: 'p50', label: 'worker p50' }),
        s.workerFunction.metricDuration({ ...oneMinute, statistic: 'p99', label: 'worker p99' }),
      ]
    : [s.hostFunction.metricDuration({ ...oneMinute, statistic: 'p50', label: 'host p50' })];
  dashboard.addWidgets(
    graph(`${s.workerFunction ? 'Worker' : 'Host (queue consumer)'} errors, throttles, breaker`, [
      consumer.metricErrors({ ...oneMinute, label: `${who} errors` }),
      consumer.metricThrottles({ ...oneMinute, label: `${who} throttled (Lambda)` }),
      w('Throttles', 'Sum', 'AWS throttles after retries'),
      w('BreakerOpens', 'Sum', 'breaker opens'),
    ]),
    graph(s.workerFunction ? 'Worker and host duration (ms)' : 'Host duration (ms)', [
      ...consumerDuration,
      s.hostFunction.metricDuration({ ...oneMinute, statistic: 'p99', label: 'host p99' }),
    ]),
    graph(
      'Streams, S3, KMS, slot bumps',
      [w('StreamChunks'), w('S3Offloads'), w('KmsCalls'), w('SlotBumps')],
      [w('StreamBytes')],
    ),
  );
  return dashboard;
}

/**
 * An alarm's props where they differ from the default: alarm at one or more in one period, missing
 * data not breaching.
 */
type AlarmSpec = Omit<cloudwatch.AlarmProps, 'threshold' | 'evaluationPeriods'> &
  Partial<Pick<cloudwatch.AlarmProps, 'threshold' | 'evaluationPeriods'>>;

/** Alarms on the World's own metrics; `make` adds the stack's alarm action. */
function worldAlarms(
  s: Pick<ObservedStack, 'queue'>,
  make: (id: string, spec: AlarmSpec) => cloudwatch.Alarm,
): cloudwatch.Alarm[] {
  const five = Duration.minutes(5);
  return [
    make('DeadLetteredAlarm', {
      alarmDescription:
        'A delivery failed on its last allowed receive and went to the DLQ (World metric DeliveriesDeadLettered): see the worker log line "DLQ:", then `eve-world-aws redrive --dry-run`',
      metric: worldMetric(s.queue, 'DeliveriesDeadLettered', 'Sum', five),
    }),
    make('BreakerOpenAlarm', {
      alarmDescription:
        'The worker opened its circuit breaker: the flow route (host) keeps failing or is unreachable; messages are kept, not dead-lettered',
      metric: worldMetric(s.queue, 'BreakerOpens', 'Sum', five),
    }),
    make('SustainedThrottlingAlarm', {
      alarmDescription:
        'AWS calls stay throttled after the SDK retries, for 15 minutes (World metric Throttles): raise the table/queue limits or lower the worker concurrency',
      metric: worldMetric(s.queue, 'Throttles', 'Sum', five),
      threshold: 10,
      evaluationPeriods: 3,
    }),
  ];
}

/**
 * The alarms and, unless `dashboard: false`, the dashboard, in `scope` (ids `<Name>Alarm`,
 * `Dashboard`).
 */
export function addObservability(
  scope: Construct,
  props: EveWorldAwsProps,
  s: ObservedStack & { readonly sweeperFunction?: lambda.IFunction },
): { alarms: cloudwatch.Alarm[]; dashboard?: cloudwatch.Dashboard } {
  const alarm = (id: string, a: AlarmSpec) => {
    const x = new cloudwatch.Alarm(scope, id, {
      threshold: 1,
      evaluationPeriods: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      ...a,
    });
    if (props.alarmTopic) x.addAlarmAction(new cwActions.SnsAction(props.alarmTopic));
    return x;
  };
  const ageThreshold = props.oldestMessageAgeThreshold ?? Duration.minutes(30);
  const alarms = [
    alarm('DeadLetterAlarm', {
      alarmDescription: 'Messages reached the DLQ: inspect with `eve-world-aws redrive --dry-run`',
      metric: s.deadLetterQueue.metricApproximateNumberOfMessagesVisible({
        period: Duration.minutes(1),
        statistic: 'Maximum',
      }),
    }),
    alarm('OldestMessageAlarm', {
      alarmDescription: 'The oldest queue message waits too long: the worker is failing or throttled',
      metric: s.queue.metricApproximateAgeOfOldestMessage({ period: Duration.minutes(1), statistic: 'Maximum' }),
      threshold: ageThreshold.toSeconds(),
      evaluationPeriods: 5,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
    }),
    alarm(s.workerFunction ? 'WorkerErrorsAlarm' : 'HostErrorsAlarm', {
      alarmDescription: s.workerFunction
        ? 'The SQS worker function failed invocations'
        : 'The host function failed invocations (it consumes the queue: a failed batch is retried whole; see the host log)',
      metric: (s.workerFunction ?? s.hostFunction).metricErrors({ period: Duration.minutes(5), statistic: 'Sum' }),
    }),
    // The World's own metrics (EMF from the worker and the host): dead-letters, breaker,
    // throttling.
    ...worldAlarms(s, alarm),
  ];
  if (s.sweeperFunction)
    alarms.push(
      alarm('SweeperErrorsAlarm', {
        alarmDescription:
          'The orphan sweep failed (objects or runs it could not sweep, or a bad environment): see the sweeper log; `eve-world-aws sweep` runs it by hand',
        metric: s.sweeperFunction.metricErrors({ period: Duration.minutes(5), statistic: 'Sum' }),
      }),
    );
  const dashboard = props.dashboard !== false ? worldDashboard(scope, 'Dashboard', s) : undefined;
  return { alarms, dashboard };
}
