/**
 * The deployment kit in deploy/ (docs/deployment.md): the dashboard and the alert rules query only metrics the
 * gateway exports (read from a running gateway's /metrics), and follow the conventions on-call relies on; the
 * Kubernetes kustomize base, components and every overlay as `kubectl kustomize` renders them pass the Kubernetes
 * JSON schemas (the kubernetes-models packages carry them) and agree with each other, with the Dockerfile's heap
 * flags and with deploy/config.yaml; that config loads in production from secret files; compose.yaml keeps its
 * one-shot, loopback and limit rules. .ci/run also checks compose.yaml with `docker-compose config` and runs
 * `promtool test rules`.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PrometheusRule, ServiceMonitor } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1';
import { Deployment } from 'kubernetes-models/apps/v1';
import { CronJob, Job } from 'kubernetes-models/batch/v1';
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { ConfigMap, Service, ServiceAccount } from 'kubernetes-models/v1';
import YAML from 'yaml';
import { parseConfig } from '../../src/config/load.js';
import { findUnsafeSettings } from '../../src/config/production-checks.js';
import { startTestGateway, TEST_ADMIN_KEY, type TestGateway } from '../helpers/gateway.js';
import { parsePrometheusText } from '../helpers/prometheus.js';

const DEPLOY = new URL('../../deploy/', import.meta.url);
const read = (path: string) => readFileSync(new URL(path, DEPLOY), 'utf8');

/** PromQL words that are not metric names: functions, aggregations, keywords. */
const PROMQL_WORDS = new Set([
  'sum',
  'max',
  'min',
  'avg',
  'count',
  'rate',
  'increase',
  'irate',
  'histogram_quantile',
  'by',
  'without',
  'and',
  'or',
  'unless',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'bool',
  'offset',
  'label_values',
  'abs',
  'clamp_min',
  'time',
  'max_over_time',
]);

/**
 * The metric names a PromQL expression reads: label matchers, grouping lists, ranges, strings and numbers removed,
 * whatever identifier is left that is not a PromQL word. Grafana's `$variables` are removed first.
 */
export function metricNamesIn(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\$\{?\w+\}?/g, ' ')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(by|without|on|ignoring)\s*\([^)]*\)/g, ' ')
    .replace(/\b\d+(\.\d+)?(e[+-]?\d+)?\b/gi, ' ');
  const words = bare.match(/[A-Za-z_:][A-Za-z0-9_:]*/g) ?? [];
  return [...new Set(words.filter((w) => !PROMQL_WORDS.has(w)))];
}

function dashboardExpressions(): string[] {
  const dashboard = JSON.parse(read('grafana/dashboards/crm-sms-gateway.json')) as {
    panels: Array<{ targets?: Array<{ expr: string }> }>;
    templating: { list: Array<{ definition?: string }> };
  };
  return [
    ...dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr)),
    ...dashboard.templating.list.flatMap((v) => (v.definition ? [v.definition] : [])),
  ];
}

function ruleExpressions(): string[] {
  const rules = YAML.parse(read('prometheus/alerts.yml')) as { groups: Array<{ rules: Array<{ expr: string }> }> };
  return rules.groups.flatMap((g) => g.rules.map((r) => r.expr));
}

/** Prometheus' own series, not the gateway's. */
const FROM_PROMETHEUS = new Set(['up']);

describe('the dashboard and the alert rules read what the gateway exports', () => {
  let gw: TestGateway;
  let exported: Set<string>;
  beforeAll(async () => {
    gw = await startTestGateway();
    const exposition = parsePrometheusText(await (await fetch(`${gw.url}/metrics`, { headers: { authorization: `Bearer ${TEST_ADMIN_KEY}` } })).text());
    // A histogram with no observation yet has only its # TYPE line: its series names follow from the type.
    const suffixes: Record<string, string[]> = { histogram: ['_bucket', '_sum', '_count'], summary: ['', '_sum', '_count'] };
    exported = new Set(exposition.samples.map((s) => s.name));
    for (const [name, type] of exposition.types) for (const suffix of suffixes[type] ?? ['']) exported.add(name + suffix);
  });
  afterAll(async () => gw?.close());

  it('reads the names out of PromQL, and would catch a name the gateway does not have', () => {
    expect(metricNamesIn('sum by (provider) (rate(sms_gateway_messages_sent_total{outcome!="submitted",x=~"a|b"}[5m])) / 2 > 0.2')).toEqual([
      'sms_gateway_messages_sent_total',
    ]);
    expect(metricNamesIn('histogram_quantile(0.95, sum by (le) (rate(a_seconds_bucket{p=~"$provider"}[$__rate_interval]))) and on (x) b_total')).toEqual([
      'a_seconds_bucket',
      'b_total',
    ]);
    expect(metricNamesIn('label_values(sms_gateway_messages_sent_total, provider)')).toEqual(['sms_gateway_messages_sent_total', 'provider']);
    expect(exported.has('sms_gateway_messages_sent_totals')).toBe(false);
  });

  it.each([
    ['the Grafana dashboard', dashboardExpressions],
    ['the Prometheus alert rules', ruleExpressions],
  ])('%s names only exported metrics', (_label, expressions) => {
    const exprs = expressions();
    expect(exprs.length).toBeGreaterThan(5);
    // label_values(metric, label): the label is not a metric.
    const names = exprs.flatMap((e) => metricNamesIn(e.replace(/label_values\((.+),\s*\w+\s*\)/g, '$1')));
    const unknown = [...new Set(names)].filter((n) => !exported.has(n) && !FROM_PROMETHEUS.has(n));
    expect(unknown).toEqual([]);
  });

  it('shows every area the deployment guide promises', () => {
    const names = new Set(dashboardExpressions().flatMap((e) => metricNamesIn(e)));
    for (const metric of [
      'sms_gateway_messages_sent_total',
      'sms_gateway_delivery_duration_seconds_bucket',
      'sms_gateway_delivery_statuses_total',
      'sms_gateway_conversion_outbox',
      'sms_gateway_conversion_oldest_unposted_age_seconds',
      'sms_gateway_conversion_oldest_pending_age_seconds',
      'sms_gateway_http_request_duration_seconds_bucket',
      'sms_gateway_webhook_post_duration_seconds_count',
      'sms_gateway_crm_events_outbox',
      'sms_gateway_crm_events_oldest_unsent_age_seconds',
      'sms_gateway_conversions_dead_lettered_total',
      'sms_gateway_crm_events_dead_lettered_total',
      'sms_gateway_route_member_circuit',
      'sms_gateway_http_auth_refusals_total',
      'sms_gateway_build_info',
    ]) {
      expect(names, metric).toContain(metric);
    }
  });
});

type Panel = {
  type: string;
  title: string;
  description?: string;
  fieldConfig?: { defaults?: { unit?: string }; overrides?: Array<{ properties: Array<{ id: string }> }> };
  targets?: Array<{ expr: string; legendFormat?: string }>;
};

function dashboard() {
  return JSON.parse(read('grafana/dashboards/crm-sms-gateway.json')) as { panels: Panel[]; templating: { list: Array<{ name: string; definition?: string }> } };
}

describe('the dashboard, as on-call reads it', () => {
  const panels = dashboard().panels.filter((p) => p.type !== 'row');

  it('describes every panel and gives each one unit, never overridden per series', () => {
    expect(panels.filter((p) => !p.description?.trim()).map((p) => p.title)).toEqual([]);
    expect(panels.filter((p) => !p.fieldConfig?.defaults?.unit).map((p) => p.title)).toEqual([]);
    const overridden = panels.filter((p) => (p.fieldConfig?.overrides ?? []).some((o) => o.properties.some((q) => q.id === 'unit')));
    expect(overridden.map((p) => p.title)).toEqual([]);
  });

  it('filters every query by the job, namespace and instance variables, and names no job', () => {
    expect(dashboard().templating.list.map((v) => v.name)).toEqual(expect.arrayContaining(['datasource', 'job', 'namespace', 'instance']));
    for (const p of panels) {
      for (const { expr } of p.targets ?? []) {
        for (const variable of ['$job', '$namespace', '$instance']) expect(expr, `${p.title}: ${variable}`).toContain(variable);
        expect(expr, p.title).not.toMatch(/job\s*=~?\s*"(?!\$job")/);
      }
    }
  });

  it('opens on a stat row, and shows the CRM-facing latency of /channels/sms/* as p50, p95 and p99', () => {
    const stats = panels.filter((p) => p.type === 'stat');
    expect(stats.map((p) => p.title)).toEqual(['Instances up', 'Send rate', 'Send success', 'API p95', 'Receipt delay p95', 'Conversion lag']);
    const latency = panels.find((p) => p.title.startsWith('CRM-facing latency'))!;
    expect(latency.targets!.map((t) => t.expr.match(/^histogram_quantile\(([\d.]+),/)?.[1])).toEqual(['0.5', '0.95', '0.99']);
    for (const { expr } of latency.targets!) expect(expr).toMatch(/sms_gateway_http_request_duration_seconds_bucket\{[^}]*route=~"\/channels\/sms\/\.\*"/);
  });
});

function hasPromtool(): boolean {
  try {
    execFileSync('promtool', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** .ci/run installs Debian's prometheus package for promtool; elsewhere this check is skipped. */
describe.skipIf(!hasPromtool())('the dashboard’s queries, as Prometheus parses them', () => {
  it('parse, with Grafana’s variables replaced as Grafana would', () => {
    const exprs = dashboard().panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr));
    const asPromQL = (e: string) => e.replaceAll('$__rate_interval', '5m').replace(/\$\{?(job|namespace|instance|provider)\}?/g, '.*');
    const dir = mkdtempSync(join(tmpdir(), 'dashboard-promql-'));
    try {
      const file = join(dir, 'rules.yml');
      const rules = exprs.map((e, i) => ({ record: `dashboard:query_${i}`, expr: asPromQL(e) }));
      writeFileSync(file, YAML.stringify({ groups: [{ name: 'dashboard', rules }] }));
      expect(execFileSync('promtool', ['check', 'rules', file], { encoding: 'utf8' })).toContain(`SUCCESS: ${rules.length} rules found`);
      writeFileSync(file, YAML.stringify({ groups: [{ name: 'dashboard', rules: [{ record: 'broken', expr: 'sum(rate(x[5m])' }] }] }));
      expect(() => execFileSync('promtool', ['check', 'rules', file], { stdio: 'pipe' })).toThrow();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

type AlertRule = { alert: string; expr: string; for?: string; annotations: Record<string, string> };
const alertRules = () => (YAML.parse(read('prometheus/alerts.yml')) as { groups: Array<{ rules: AlertRule[] }> }).groups.flatMap((g) => g.rules);

/** GitHub's anchor for a Markdown heading: lower case, punctuation dropped, spaces to hyphens. */
const anchorOf = (heading: string) =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s-]/gu, '')
    .replace(/\s/g, '-');

describe('the alert rules', () => {
  it('link each alert to its runbook section in docs/operations.md', () => {
    const operations = readFileSync(new URL('../../docs/operations.md', import.meta.url), 'utf8');
    const anchors = new Set([...operations.matchAll(/^#+\s+(.+)$/gm)].map((m) => anchorOf(m[1]!)));
    expect(anchorOf('Sends: 20 % refused (SmsGatewayDown)')).toBe('sends-20--refused-smsgatewaydown');
    for (const rule of alertRules()) {
      const url = rule.annotations.runbook_url;
      expect(url, rule.alert).toMatch(/\/docs\/operations\.md#[a-z0-9-]+$/);
      expect(anchors, rule.alert).toContain(url!.split('#')[1]);
    }
  });

  it('have a promtool case for each alert, and name no job', () => {
    const cases = YAML.parse(read('prometheus/alerts.test.yml')) as { tests: Array<{ alert_rule_test: Array<{ alertname: string; exp_alerts: unknown[] }> }> };
    const fired = new Set(cases.tests.flatMap((t) => t.alert_rule_test.filter((a) => a.exp_alerts.length > 0).map((a) => a.alertname)));
    for (const rule of alertRules()) {
      expect(fired, rule.alert).toContain(rule.alert);
      expect(rule.expr, rule.alert).not.toMatch(/\bjob\s*=/);
    }
  });

  it('page on a delivery rate drop within 30 minutes: the window plus `for` stays under it', () => {
    const rule = alertRules().find((r) => r.alert === 'SmsGatewayDeliveryRateLow')!;
    const minutes = (d: string) => Number(d.replace(/m$/, ''));
    const windows = [...rule.expr.matchAll(/\[(\d+)m\]/g)].map((m) => Number(m[1]));
    expect(Math.max(...windows) + minutes(rule.for!)).toBeLessThanOrEqual(30);
  });
});

type Manifest = { apiVersion: string; kind: string; metadata: { name: string; labels?: Record<string, string> }; spec?: any; data?: Record<string, string> };

const KUBERNETES = new URL('kubernetes/', DEPLOY);
const OVERLAYS = readdirSync(new URL('overlays/', KUBERNETES)).sort();

/** The resource files of the base and the components, as written (kustomization.yaml and the copied config aside). */
function sourceManifests(): Array<{ file: string; doc: Manifest }> {
  return ['base/', ...readdirSync(new URL('components/', KUBERNETES)).map((c) => `components/${c}/`)].flatMap((dir) =>
    readdirSync(new URL(dir, KUBERNETES))
      .filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml' && f !== 'config.yaml')
      .sort()
      .flatMap((f) => YAML.parseAllDocuments(readFileSync(new URL(dir + f, KUBERNETES), 'utf8')).map((d) => ({ file: dir + f, doc: d.toJS() as Manifest }))),
  );
}

/** `kubectl kustomize` with kustomize v5 (kubectl 1.27+); without it the rendering checks are skipped, and .ci/run says so. */
function kubectlKustomize(): boolean {
  try {
    return /Kustomize Version: v[5-9]/.test(execFileSync('kubectl', ['version', '--client'], { encoding: 'utf8' }));
  } catch {
    return false;
  }
}
const KUSTOMIZE = kubectlKustomize();

function render(dir: string): Manifest[] {
  const out = execFileSync('kubectl', ['kustomize', new URL(dir, KUBERNETES).pathname], { encoding: 'utf8' });
  return YAML.parseAllDocuments(out).map((d) => d.toJS() as Manifest);
}

/** The kubernetes-models class of each kind the kit uses; another kind fails until it is added here. */
const MODELS = new Map<string, { new (data: any): { validate(): void } }>([
  ['apps/v1 Deployment', Deployment],
  ['batch/v1 Job', Job],
  ['batch/v1 CronJob', CronJob],
  ['policy/v1 PodDisruptionBudget', PodDisruptionBudget],
  ['v1 Service', Service],
  ['v1 ConfigMap', ConfigMap],
  ['v1 ServiceAccount', ServiceAccount],
  ['networking.k8s.io/v1 NetworkPolicy', NetworkPolicy],
  ['monitoring.coreos.com/v1 ServiceMonitor', ServiceMonitor],
  ['monitoring.coreos.com/v1 PrometheusRule', PrometheusRule],
]);

async function validateManifest(doc: Manifest): Promise<void> {
  const Model = MODELS.get(`${doc.apiVersion} ${doc.kind}`);
  if (!Model) throw new Error(`no schema for ${doc.apiVersion} ${doc.kind}`);
  new Model(doc).validate();
}

const WORKLOADS = ['Deployment', 'Job', 'CronJob'];
const podSpec = (doc: Manifest) => (doc.kind === 'CronJob' ? doc.spec.jobTemplate.spec.template.spec : doc.spec.template.spec);
const podLabels = (doc: Manifest) => (doc.kind === 'CronJob' ? doc.spec.jobTemplate.spec.template.metadata.labels : doc.spec.template.metadata.labels);
const one = (docs: Manifest[], kind: string) => {
  const found = docs.filter((d) => d.kind === kind);
  expect(found, kind).toHaveLength(1);
  return found[0]!;
};

/** The Dockerfile's NODE_OPTIONS: what a container that sets none runs with. */
const IMAGE_NODE_OPTIONS = readFileSync(new URL('../../Dockerfile', import.meta.url), 'utf8').match(/^ENV NODE_OPTIONS="([^"]*)"/m)![1]!;
const MIB: Record<string, number> = { Mi: 1, Gi: 1024 };
const mebibytes = (quantity: string) => Number(quantity.match(/^\d+/)![0]) * MIB[quantity.replace(/^\d+/, '')]!;
/** What a Node process takes beside its V8 heap (docs/operations.md "Memory": binary ~50, malloc 40-45, threads ~25 MiB). */
const NATIVE_MIB = 128;

/** What every workload of one rendering (or of the base as written) must share, and the rules each follows. */
function checkWorkloads(docs: Manifest[], rendered = true) {
  const workloads = docs.filter((d) => WORKLOADS.includes(d.kind));
  expect(workloads.map((w) => w.kind).sort()).toEqual(['CronJob', 'Deployment', 'Job']);
  const reference = podSpec(one(docs, 'Deployment'));
  const serviceAccount = one(docs, 'ServiceAccount');
  expect((serviceAccount as Manifest & { automountServiceAccountToken?: boolean }).automountServiceAccountToken).toBe(false);
  const policy = one(docs, 'NetworkPolicy');
  for (const w of workloads) {
    const spec = podSpec(w);
    const [container] = spec.containers;
    expect(spec.securityContext, w.kind).toEqual(reference.securityContext);
    expect(spec.securityContext.fsGroup, w.kind).toBe(spec.securityContext.runAsGroup);
    expect(spec.securityContext.runAsNonRoot, w.kind).toBe(true);
    expect(container.securityContext, w.kind).toEqual({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } });
    expect(spec.serviceAccountName, w.kind).toBe(serviceAccount.metadata.name);
    expect(spec.automountServiceAccountToken, w.kind).toBe(false);
    expect(spec.volumes, w.kind).toEqual(reference.volumes);
    expect(container.volumeMounts, w.kind).toEqual(reference.containers[0].volumeMounts);
    expect(container.image, w.kind).toBe(reference.containers[0].image);
    expect(podLabels(w), w.kind).toMatchObject(policy.spec.podSelector.matchLabels);
    // The memory limit sits above the V8 heap ceiling, its young generation (3 × semi-space) and the native part.
    const nodeOptions = container.env?.find((e: { name: string }) => e.name === 'NODE_OPTIONS')?.value ?? IMAGE_NODE_OPTIONS;
    const oldSpace = Number(nodeOptions.match(/--max-old-space-size=(\d+)/)?.[1]);
    const semiSpace = Number(nodeOptions.match(/--max-semi-space-size=(\d+)/)?.[1] ?? 16);
    expect(oldSpace, `${w.kind} heap ceiling`).toBeGreaterThan(0);
    expect(mebibytes(container.resources.limits.memory), `${w.kind} memory limit`).toBeGreaterThanOrEqual(oldSpace + 3 * semiSpace + NATIVE_MIB);
    expect(mebibytes(container.resources.requests.memory), w.kind).toBeLessThanOrEqual(mebibytes(container.resources.limits.memory));
  }
  if (!rendered) return { reference, workloads };
  // The config as a generated ConfigMap: its name carries a hash of its content, so a changed config is a changed pod
  // template (the Deployment rolls) and every workload reads the one this rendering made.
  const configMap = one(docs, 'ConfigMap');
  expect(configMap.metadata.name).toMatch(/^crm-sms-gateway-config-[a-z0-9]{10}$/);
  expect(configMap.data!['config.yaml']).toBe(read('config.yaml'));
  expect(reference.volumes.find((v: { name: string }) => v.name === 'config').configMap.name).toBe(configMap.metadata.name);
  // The flush CronJob is suspended and never runs every minute: serve's own loops do its work.
  const cronJob = one(docs, 'CronJob');
  expect(cronJob.spec.suspend).toBe(true);
  expect(cronJob.spec.schedule.split(' ')[0]).not.toBe('*');
  expect(podSpec(cronJob).containers[0].args[0]).toBe('flush');
  expect(cronJob.spec.concurrencyPolicy).toBe('Forbid');
  expect(podSpec(one(docs, 'Job')).containers[0].args[0]).toBe('migrate');
  return { reference, workloads };
}

describe('the Kubernetes base and components as written', () => {
  it('pass the Kubernetes schemas, and the check refuses a manifest that does not', async () => {
    const all = sourceManifests();
    expect(all.map((m) => m.doc.kind).sort()).toEqual([
      'CronJob',
      'Deployment',
      'Job',
      'NetworkPolicy',
      'PodDisruptionBudget',
      'PrometheusRule',
      'Service',
      'ServiceAccount',
      'ServiceMonitor',
    ]);
    for (const { file, doc } of all) await expect(validateManifest(doc), file).resolves.toBeUndefined();
    const broken = structuredClone(all.find((m) => m.doc.kind === 'Deployment')!.doc);
    broken.spec.template.spec.containers[0].readinessProbe.httpGet.port = { name: 'http' };
    await expect(validateManifest(broken)).rejects.toThrow(/readinessProbe\/httpGet\/port/);
    const brokenMonitor = structuredClone(all.find((m) => m.doc.kind === 'ServiceMonitor')!.doc);
    brokenMonitor.spec.endpoints = 'metrics';
    await expect(validateManifest(brokenMonitor)).rejects.toThrow();
  });

  it('run every workload under one security context (fsGroup included), identity and volumes, limits above the heap', () => {
    checkWorkloads(
      sourceManifests().map((m) => m.doc),
      false,
    );
  });

  it('carry deploy/config.yaml unchanged, and the alert rules unchanged in the PrometheusRule', () => {
    expect(readFileSync(new URL('base/config.yaml', KUBERNETES), 'utf8')).toBe(read('config.yaml'));
    const rule = sourceManifests().find((m) => m.doc.kind === 'PrometheusRule')!.doc;
    expect(rule.spec).toEqual(YAML.parse(read('prometheus/alerts.yml')));
  });
});

describe.skipIf(!KUSTOMIZE)('every overlay as `kubectl kustomize` renders it', () => {
  it('has a development and a production overlay', () => {
    expect(OVERLAYS).toEqual(['development', 'production']);
  });

  it.each(OVERLAYS)('%s: passes the schemas, with every workload under one security context, identity and config', async (overlay) => {
    const docs = render(`overlays/${overlay}`);
    for (const doc of docs) await expect(validateManifest(doc), `${doc.kind} ${doc.metadata.name}`).resolves.toBeUndefined();
    const { workloads } = checkWorkloads(docs);
    const namespaces = new Set(docs.map((d) => (d.metadata as { namespace?: string }).namespace));
    expect(namespaces.size, 'one namespace').toBe(1);
    expect([...namespaces][0]).toBeTruthy();
    const deployment = one(docs, 'Deployment');
    expect(deployment.spec.replicas).toBeGreaterThan(one(docs, 'PodDisruptionBudget').spec.minAvailable);
    const spread = podSpec(deployment).topologySpreadConstraints.map((t: { topologyKey: string }) => t.topologyKey);
    expect(spread).toEqual(['topology.kubernetes.io/zone', 'kubernetes.io/hostname']);
    expect(workloads.length).toBe(3);
  });

  it('production: images by digest, three replicas, the ServiceMonitor and the alert rules', () => {
    const docs = render('overlays/production');
    for (const w of docs.filter((d) => WORKLOADS.includes(d.kind))) expect(podSpec(w).containers[0].image, w.kind).toMatch(/@sha256:[0-9a-f]{64}$/);
    expect(one(docs, 'Deployment').spec.replicas).toBe(3);
    const monitor = one(docs, 'ServiceMonitor');
    expect(monitor.spec.selector.matchLabels).toEqual(one(docs, 'Service').spec.selector);
    expect(monitor.spec.endpoints[0].port).toBe('metrics');
    expect(one(docs, 'PrometheusRule').spec).toEqual(YAML.parse(read('prometheus/alerts.yml')));
  });

  it('development: one replica that a node drain may evict, no Prometheus Operator resources', () => {
    const docs = render('overlays/development');
    expect(one(docs, 'Deployment').spec.replicas).toBe(1);
    expect(one(docs, 'PodDisruptionBudget').spec.minAvailable).toBe(0);
    expect(docs.filter((d) => d.apiVersion.startsWith('monitoring.coreos.com/'))).toEqual([]);
  });

  it('the base alone: probes /readyz and /healthz, gives SIGTERM more than preStop plus server.shutdown_timeout', () => {
    const docs = render('base');
    const spec = podSpec(one(docs, 'Deployment'));
    const [container] = spec.containers;
    expect(container.args).toEqual(['serve', '--no-migrate', '--config', '/etc/crm-sms-gateway/config.yaml']);
    expect(container.readinessProbe.httpGet.path).toBe('/readyz');
    expect(container.livenessProbe.httpGet.path).toBe('/healthz');
    const preStopSeconds = Number(container.lifecycle.preStop.exec.command[1]);
    const shutdownMs = loadDeployConfig().server.shutdown_timeout;
    expect(spec.terminationGracePeriodSeconds * 1000).toBeGreaterThan(preStopSeconds * 1000 + shutdownMs);
    expect(container.ports.map((p: { containerPort: number }) => p.containerPort)).toEqual([8080, loadDeployConfig().metrics.port]);
    const labels = one(docs, 'Deployment').spec.template.metadata.labels;
    expect(labels).toMatchObject(one(docs, 'Service').spec.selector);
    expect(labels).toMatchObject(one(docs, 'PodDisruptionBudget').spec.selector.matchLabels);
    // A changed config is a new ConfigMap name, so the pod template changes and the Deployment rolls.
    const dir = mkdtempSync(join(tmpdir(), 'kustomize-'));
    try {
      execFileSync('cp', ['-r', new URL('base', KUBERNETES).pathname, dir]);
      writeFileSync(join(dir, 'base', 'config.yaml'), `${read('config.yaml')}# changed\n`);
      const changed = YAML.parseAllDocuments(execFileSync('kubectl', ['kustomize', join(dir, 'base')], { encoding: 'utf8' })).map((d) => d.toJS() as Manifest);
      expect(one(changed, 'ConfigMap').metadata.name).not.toBe(one(docs, 'ConfigMap').metadata.name);
      expect(podSpec(one(changed, 'Deployment')).volumes[0].configMap.name).toBe(one(changed, 'ConfigMap').metadata.name);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

/** deploy/config.yaml with its /run/secrets/gateway files made in a temporary folder. */
const secretDir = mkdtempSync(join(tmpdir(), 'deploy-secrets-'));
afterAll(() => rmSync(secretDir, { recursive: true, force: true }));
function loadDeployConfig() {
  const text = read('config.yaml').replaceAll('/run/secrets/gateway/', `${secretDir}/`);
  // Only the references that point into the secret folder (a comment may mention `${file:…}` too).
  for (const name of text.match(/(?<=\$\{file:)[^}]+/g)?.filter((f) => f.startsWith(`${secretDir}/`)) ?? []) {
    const value = name.endsWith('database_url')
      ? 'postgres://gateway:pw@postgres:5432/crm_sms_gateway'
      : name.endsWith('rabbitmq_url')
        ? 'amqp://gateway:pw@rabbitmq:5672'
        : `${'s'.repeat(24)}-${name.length}`;
    writeFileSync(name, `${value}\n`);
  }
  return parseConfig(YAML.parse(text), { PUBLIC_URL: 'https://sms-gateway.example.com', CRM_WEBHOOK_URL: 'https://crm.example.com' }, 'deploy/config.yaml');
}

describe('deploy/config.yaml and compose.yaml', () => {
  it('loads in production from secret files with nothing production refuses', () => {
    const config = loadDeployConfig();
    expect(config.server.environment).toBe('production');
    expect(config.database.url).toBe('postgres://gateway:pw@postgres:5432/crm_sms_gateway');
    const findings = findUnsafeSettings(config);
    expect(findings.filter((f) => f.severity !== 'warn')).toEqual([]);
    // Inside the compose network the broker is plain amqp:// and the scrape port is open to Prometheus only; both are
    // logged as warnings at start, so an operator copying this file to a shared network is told.
    expect(findings.map((f) => f.key).sort()).toEqual(['crm.integration.rabbitmq.url', 'metrics.public']);
  });

  it('has Prometheus scrape the metrics port the config sets, and serve start without migrating', () => {
    const prometheus = YAML.parse(read('prometheus/prometheus.yml'));
    expect(prometheus.scrape_configs[0].static_configs[0].targets).toEqual([`gateway:${loadDeployConfig().metrics.port}`]);
    const compose = YAML.parse(read('compose.yaml'));
    expect(compose.services.gateway.command).toContain('--no-migrate');
    expect(compose.services.gateway.depends_on.migrate.condition).toBe('service_completed_successfully');
    expect(Object.keys(compose.services).sort()).toEqual(['flush', 'gateway', 'grafana', 'migrate', 'postgres', 'prometheus', 'rabbitmq']);
  });
});

describe('compose.yaml', () => {
  const compose = YAML.parse(read('compose.yaml'), { merge: true }) as {
    services: Record<
      string,
      {
        image: string;
        command?: string[];
        entrypoint?: unknown;
        healthcheck?: { disable?: boolean };
        restart?: string;
        ports?: string[];
        mem_limit?: string;
        environment?: Record<string, string>;
        profiles?: string[];
      }
    >;
  };

  it('runs migrate and flush once, without the image’s healthcheck, and no shell loop as PID 1', () => {
    for (const name of ['migrate', 'flush']) {
      const service = compose.services[name]!;
      expect(service.healthcheck, name).toEqual({ disable: true });
      expect(service.restart, name).toBe('no');
      expect(service.entrypoint, name).toBeUndefined();
      expect(service.command?.[0], name).toBe(name);
    }
    // Not started by `up`: serve's loops do its work (docker-compose run --rm flush when the gateway is stopped).
    expect(compose.services.flush!.profiles).toEqual(['flush']);
    for (const [name, service] of Object.entries(compose.services)) expect(JSON.stringify(service.entrypoint ?? ''), name).not.toMatch(/while|sleep/);
  });

  it('publishes Prometheus and Grafana on the loopback only, limits every service’s memory, and pins every image', () => {
    expect(compose.services.prometheus!.ports).toEqual(['127.0.0.1:9090:9090']);
    expect(compose.services.grafana!.ports).toEqual(['127.0.0.1:3000:3000']);
    for (const [name, service] of Object.entries(compose.services)) {
      expect(service.mem_limit, name).toMatch(/^\d+[mg]$/);
      // Built here, or a third-party image at an exact version (PostgreSQL's are major.minor) or by digest: never a
      // bare major such as postgres:17 or rabbitmq:4-management.
      if (service.image !== 'crm-sms-gateway:local') expect(service.image, name).toMatch(/:v?\d+\.\d+(\.\d+)?(-[\w.-]+)?$|@sha256:[0-9a-f]{64}$/);
    }
    // The gateway's limit agrees with its heap flags as the Kubernetes Deployment's does.
    const gateway = compose.services.gateway!;
    const oldSpace = Number(gateway.environment!.NODE_OPTIONS!.match(/--max-old-space-size=(\d+)/)![1]);
    expect(Number(gateway.mem_limit!.replace(/m$/, ''))).toBeGreaterThanOrEqual(oldSpace + 3 * 8 + NATIVE_MIB);
  });
});
