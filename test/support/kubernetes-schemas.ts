import { validate as deployment } from 'kubernetes-models/_schemas/IoK8sApiAppsV1Deployment';
import { validate as horizontalPodAutoscaler } from 'kubernetes-models/_schemas/IoK8sApiAutoscalingV2HorizontalPodAutoscaler';
import { validate as configMap } from 'kubernetes-models/_schemas/IoK8sApiCoreV1ConfigMap';
import { validate as namespace } from 'kubernetes-models/_schemas/IoK8sApiCoreV1Namespace';
import { validate as secret } from 'kubernetes-models/_schemas/IoK8sApiCoreV1Secret';
import { validate as service } from 'kubernetes-models/_schemas/IoK8sApiCoreV1Service';
import { validate as serviceAccount } from 'kubernetes-models/_schemas/IoK8sApiCoreV1ServiceAccount';
import { validate as networkPolicy } from 'kubernetes-models/_schemas/IoK8sApiNetworkingV1NetworkPolicy';
import { validate as podDisruptionBudget } from 'kubernetes-models/_schemas/IoK8sApiPolicyV1PodDisruptionBudget';
import type { Manifest } from './kubernetes-manifests.js';

// The Kubernetes API's schemas, as the kubernetes-models package compiles them from the
// API's OpenAPI document (Kubernetes 1.36): what `kubectl apply` would have the API server
// refuse, checked without a cluster.

/** A compiled schema: true when the data is valid, else its problems in `errors`. */
type SchemaCheck = ((data: unknown) => boolean) & { errors?: SchemaError[] | null };

interface SchemaError {
  readonly instancePath: string;
  readonly keyword: string;
  readonly params: Readonly<Record<string, unknown>>;
}

/** The schema of each apiVersion and kind config/kubernetes holds. */
const SCHEMAS: Readonly<Record<string, SchemaCheck>> = {
  'apps/v1 Deployment': deployment,
  'autoscaling/v2 HorizontalPodAutoscaler': horizontalPodAutoscaler,
  'v1 ConfigMap': configMap,
  'v1 Namespace': namespace,
  'v1 Secret': secret,
  'v1 Service': service,
  'v1 ServiceAccount': serviceAccount,
  'networking.k8s.io/v1 NetworkPolicy': networkPolicy,
  'policy/v1 PodDisruptionBudget': podDisruptionBudget,
};

/**
 * What the API server would refuse in an object, one line each (none: nothing): a value its
 * schema does not allow, and a field it does not know. kubectl asks the server for strict
 * field validation, so a misspelt field (`readOnlyRootFileSystem`) fails the apply; the
 * compiled schemas pass any field they do not name, so each one is probed (below).
 */
export function kubernetesSchemaProblems(object: Manifest): string[] {
  const check = SCHEMAS[`${object.apiVersion} ${object.kind}`];
  if (check === undefined) return [`no schema here for ${object.apiVersion} ${object.kind}`];
  return [...valueProblems(check, object), ...unknownFields(check, object, object, [])];
}

function valueProblems(check: SchemaCheck, object: unknown): string[] {
  if (check(object)) return [];
  return (check.errors ?? []).map((error) => `${error.instancePath || '/'}: ${describe(error)}`);
}

function describe(error: SchemaError): string {
  const { keyword, params } = error;
  if (keyword === 'type') return `must be ${String(params.type)}`;
  if (keyword === 'required') return `must have ${String(params.missingProperty)}`;
  if (keyword === 'enum') return `must be one of ${JSON.stringify(params.allowedValues)}`;
  return `${keyword} ${JSON.stringify(params)}`;
}

/** A value no schema type accepts: no string, number, boolean, object, array or null. */
const PROBE = Symbol('probe');

/**
 * The fields under `keys` the schema does not know. A field it knows is checked against its
 * type, so a probe value in its place is refused there; the probe in a field it does not know
 * passes. Maps (labels, data, resource quantities) check each entry, so their keys count as
 * known; the fields the probe finds known are followed down.
 */
function unknownFields(
  check: SchemaCheck,
  root: Manifest,
  value: unknown,
  keys: readonly string[],
): string[] {
  if (value === null || typeof value !== 'object') return [];
  const entries = Array.isArray(value)
    ? value.map((item, i): [string, unknown] => [String(i), item])
    : Object.entries(value);
  return entries.flatMap(([key, child]) => {
    const at = [...keys, key];
    if (!Array.isArray(value) && !refusesProbe(check, root, at))
      return [`${pointer(at)}: not a field of ${root.apiVersion} ${root.kind}`];
    return unknownFields(check, root, child, at);
  });
}

/** The JSON Pointer (RFC 6901) of a field, as the schema's errors name it. */
function pointer(keys: readonly string[]): string {
  return keys.map((key) => `/${key.replaceAll('~', '~0').replaceAll('/', '~1')}`).join('');
}

function refusesProbe(check: SchemaCheck, root: Manifest, keys: readonly string[]): boolean {
  const probed = structuredClone(root) as unknown as Record<string, unknown>;
  let parent = probed;
  for (const key of keys.slice(0, -1)) parent = parent[key] as Record<string, unknown>;
  parent[keys.at(-1) ?? ''] = PROBE;
  return !check(probed) && (check.errors ?? []).some((e) => e.instancePath === pointer(keys));
}
