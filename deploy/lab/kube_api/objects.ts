/**
 * The write path shared by every verb: create, update (main resource or status subresource), patch
 * and delete, with what kube-apiserver's generic registry does on the way: uid, creationTimestamp,
 * generation (bumped when anything but metadata and status changes), the resourceVersion
 * precondition (409 Conflict), namespaces that must exist, namespace deletion removing its objects,
 * finalizers (delete sets deletionTimestamp and waits for an update that empties them), Service
 * clusterIP allocation, CRD registration, and admission (mutating then validating webhooks) before
 * anything is stored.
 *
 * @module
 */
import type { Registry } from "./registry.ts";
import { apiVersionOf, type ResourceType } from "./resource_types.ts";
import { type Store, typeKeyOf } from "./store.ts";
import { ApiError, clone, isObject, type KubeObject, meta, notFound, str } from "./types.ts";

/** Who makes a request (AdmissionReview `userInfo`, TokenReview `user`). */
export interface UserInfo {
  username: string;
  uid?: string;
  groups: string[];
  extra?: Record<string, string[]>;
}

/** What an admission chain sees (one AdmissionReview request, less its uid). */
export interface AdmissionAttributes {
  operation: "CREATE" | "UPDATE" | "DELETE";
  type: ResourceType;
  subresource: string;
  namespace: string;
  name: string;
  object: KubeObject | null;
  oldObject: KubeObject | null;
  user: UserInfo;
}

/** Runs admission; resolves to the (possibly mutated) object or throws an ApiError that refuses it. */
export type Admit = (attrs: AdmissionAttributes) => Promise<KubeObject | null>;

const NAME_RE = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;

function kindOf(t: ResourceType): string {
  return t.kind;
}

function invalid(t: ResourceType, name: string, field: string, reason: string): ApiError {
  return new ApiError("Invalid", `${kindOf(t)} "${name}" is invalid: ${field}: ${reason}`, {
    name,
    group: t.group,
    kind: t.kind,
    causes: [{ reason: "FieldValueInvalid", message: reason, field }],
  });
}

/** Everything but metadata and status: a change of it bumps `metadata.generation`. */
function specPart(o: KubeObject): string {
  const { metadata: _m, status: _s, ...rest } = o;
  return JSON.stringify(rest);
}

/** The stored objects and the rules of writing them. */
export class ObjectApi {
  #nextIp = 1;

  constructor(readonly store: Store, readonly registry: Registry, readonly admit: Admit) {}

  #checkKind(t: ResourceType, body: KubeObject): void {
    const kind = str(body, "kind");
    const apiVersion = str(body, "apiVersion");
    if ((kind && kind !== t.kind) || (apiVersion && apiVersion !== apiVersionOf(t))) {
      throw new ApiError(
        "BadRequest",
        `the API version in the data (${apiVersion}) does not match the expected API version (${
          apiVersionOf(t)
        })` +
          ` or the kind (${kind}) does not match ${t.kind}`,
      );
    }
    body.kind = t.kind;
    body.apiVersion = apiVersionOf(t);
  }

  #checkNamespace(t: ResourceType, namespace: string): void {
    if (!t.namespaced) return;
    if (!this.store.get(this.registry.find("", "v1", "namespaces")!, "", namespace)) {
      throw notFound("namespaces", "", namespace);
    }
  }

  /** The stored object with the type's apiVersion (a CRD's versions share one store), or 404. */
  get(t: ResourceType, namespace: string, name: string): KubeObject {
    const o = this.store.get(t, t.namespaced ? namespace : "", name);
    if (!o) throw notFound(t.resource, t.group, name);
    o.apiVersion = apiVersionOf(t);
    return o;
  }

  /** Creates `body` in `namespace` (ignored for cluster-scoped types); returns the stored object. */
  async create(t: ResourceType, namespace: string, body: KubeObject, user: UserInfo): Promise<KubeObject> {
    this.#checkKind(t, body);
    const m = meta(body);
    const ns = t.namespaced ? (str(m, "namespace") || namespace) : "";
    if (t.namespaced && namespace && str(m, "namespace") && str(m, "namespace") !== namespace) {
      throw new ApiError(
        "BadRequest",
        "the namespace of the provided object does not match the namespace sent on the request",
      );
    }
    if (!str(m, "name") && str(m, "generateName")) {
      m.name = str(m, "generateName") + crypto.randomUUID().slice(0, 5);
    }
    const name = str(m, "name");
    if (!name) throw invalid(t, name, "metadata.name", "Required value: name or generateName is required");
    if (!NAME_RE.test(name) || name.length > 253) {
      throw invalid(
        t,
        name,
        "metadata.name",
        `Invalid value: "${name}": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.'`,
      );
    }
    this.#checkNamespace(t, ns);
    if (t.namespaced) m.namespace = ns;
    else delete m.namespace;
    if (this.store.get(t, ns, name)) {
      throw new ApiError(
        "AlreadyExists",
        `${t.resource}${t.group ? "." + t.group : ""} "${name}" already exists`,
        {
          name,
          group: t.group,
          kind: t.resource,
        },
      );
    }
    for (const k of ["resourceVersion", "uid", "deletionTimestamp", "managedFields"]) delete m[k];
    m.uid = crypto.randomUUID();
    m.creationTimestamp = new Date().toISOString().replace(/\.\d+Z$/, "Z");
    m.generation = 1;
    if (t.subresources.includes("status")) delete body.status;
    this.#defaults(t, body);
    const admitted = await this.admit({
      operation: "CREATE",
      type: t,
      subresource: "",
      namespace: ns,
      name,
      object: body,
      oldObject: null,
      user,
    }) ?? body;
    if (t.resource === "customresourcedefinitions") this.#registerCrd(t, name, admitted);
    return this.#out(t, this.store.put(t, admitted, "ADDED"));
  }

  #defaults(t: ResourceType, body: KubeObject): void {
    if (t.group === "" && t.resource === "pods") body.status = { phase: "Pending" };
    if (t.group === "" && t.resource === "namespaces") body.status = { phase: "Active" };
    if (t.group === "" && t.resource === "services") {
      const spec = isObject(body.spec) ? body.spec : (body.spec = {}) as KubeObject;
      if (!spec.type) spec.type = "ClusterIP";
      if (spec.type !== "ExternalName" && !spec.clusterIP) {
        const n = this.#nextIp++;
        spec.clusterIP = `10.96.${Math.floor(n / 250)}.${(n % 250) + 1}`;
        spec.clusterIPs = [spec.clusterIP];
      }
      if (!body.status) body.status = { loadBalancer: {} };
    }
  }

  #registerCrd(t: ResourceType, name: string, crd: KubeObject): void {
    try {
      this.registry.setCrd(name, crd);
    } catch (e) {
      throw invalid(
        t,
        name,
        (e as Error).message.split(":")[0],
        (e as Error).message.split(": ").slice(1).join(": "),
      );
    }
    const spec = isObject(crd.spec) ? crd.spec : {};
    const now = new Date().toISOString().replace(/\.\d+Z$/, "Z");
    crd.status = {
      acceptedNames: spec.names,
      storedVersions: (Array.isArray(spec.versions) ? spec.versions : []).filter((v) =>
        isObject(v) && v.storage
      )
        .map((v) => (v as KubeObject).name),
      conditions: ["NamesAccepted", "Established"].map((type) => ({
        type,
        status: "True",
        lastTransitionTime: now,
        reason: type === "Established" ? "InitialNamesAccepted" : "NoConflicts",
        message: type === "Established" ? "the initial names have been accepted" : "no conflicts found",
      })),
    };
  }

  /**
   * Replaces the object (`subresource` "" ) or its status ("status"). A `metadata.resourceVersion` in
   * `body` must equal the stored one (409 Conflict otherwise).
   */
  async update(
    t: ResourceType,
    namespace: string,
    name: string,
    body: KubeObject,
    user: UserInfo,
    subresource = "",
  ): Promise<KubeObject> {
    this.#checkKind(t, body);
    const ns = t.namespaced ? namespace : "";
    const old = this.get(t, ns, name);
    const m = meta(body);
    if (str(m, "name") && str(m, "name") !== name) {
      throw new ApiError(
        "BadRequest",
        `the name of the object (${str(m, "name")}) does not match the name on the URL (${name})`,
      );
    }
    const rv = str(m, "resourceVersion");
    const oldMeta = meta(old);
    if (rv && rv !== str(oldMeta, "resourceVersion")) {
      throw new ApiError(
        "Conflict",
        `Operation cannot be fulfilled on ${t.resource}${
          t.group ? "." + t.group : ""
        } "${name}": the object has been modified; please apply your changes to the latest version and try again`,
        { name, group: t.group, kind: t.resource },
      );
    }
    let next: KubeObject;
    if (subresource === "status") {
      next = clone(old);
      next.status = body.status;
    } else {
      next = body;
      if (t.subresources.includes("status")) next.status = old.status;
      const nm = meta(next);
      for (const k of ["uid", "creationTimestamp", "deletionTimestamp", "generation"]) {
        if (oldMeta[k] !== undefined) nm[k] = oldMeta[k];
        else delete nm[k];
      }
      nm.name = name;
      if (t.namespaced) nm.namespace = ns;
      if (specPart(next) !== specPart(old)) nm.generation = Number(oldMeta.generation ?? 0) + 1;
    }
    const admitted = await this.admit({
      operation: "UPDATE",
      type: t,
      subresource,
      namespace: ns,
      name,
      object: next,
      oldObject: old,
      user,
    }) ?? next;
    if (t.resource === "customresourcedefinitions" && subresource === "") {
      this.#registerCrd(t, name, admitted);
    }
    const am = meta(admitted);
    if (am.deletionTimestamp && !(Array.isArray(am.finalizers) && am.finalizers.length > 0)) {
      return this.#finalDelete(t, ns, name);
    }
    return this.#out(t, this.store.put(t, admitted, "MODIFIED", old));
  }

  /** Deletes the object (or marks it with deletionTimestamp while it has finalizers); returns it. */
  async delete(t: ResourceType, namespace: string, name: string, user: UserInfo): Promise<KubeObject> {
    const ns = t.namespaced ? namespace : "";
    const old = this.get(t, ns, name);
    await this.admit({
      operation: "DELETE",
      type: t,
      subresource: "",
      namespace: ns,
      name,
      object: null,
      oldObject: old,
      user,
    });
    const m = meta(old);
    if (Array.isArray(m.finalizers) && m.finalizers.length > 0) {
      if (m.deletionTimestamp) return old;
      const marked = clone(old);
      meta(marked).deletionTimestamp = new Date().toISOString().replace(/\.\d+Z$/, "Z");
      return this.#out(t, this.store.put(t, marked, "MODIFIED", old));
    }
    return this.#finalDelete(t, ns, name);
  }

  #finalDelete(t: ResourceType, ns: string, name: string): KubeObject {
    if (t.group === "" && t.resource === "namespaces") {
      for (const other of this.registry.all()) {
        if (!other.namespaced || this.registry.find(other.group, other.version, other.resource) !== other) {
          continue;
        }
        for (const o of this.store.list(typeKeyOf(other), name)) {
          this.store.remove(typeKeyOf(other), name, str(meta(o), "name"));
        }
      }
    }
    if (t.resource === "customresourcedefinitions" && t.group === "apiextensions.k8s.io") {
      const crd = this.store.get(t, "", name);
      const spec = crd && isObject(crd.spec) ? crd.spec : {};
      const names = isObject(spec.names) ? spec.names : {};
      const key = `${str(spec, "group")}/${str(names, "plural")}`;
      for (const o of this.store.list(key)) {
        this.store.remove(key, str(meta(o), "namespace"), str(meta(o), "name"));
      }
      this.registry.deleteCrd(name);
    }
    const removed = this.store.remove(t, ns, name);
    if (!removed) throw notFound(t.resource, t.group, name);
    return this.#out(t, removed);
  }

  #out(t: ResourceType, o: KubeObject): KubeObject {
    o.apiVersion = apiVersionOf(t);
    o.kind = t.kind;
    return o;
  }
}
