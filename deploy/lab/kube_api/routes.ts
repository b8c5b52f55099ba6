/**
 * Request routing: discovery paths, then `/api/v1/...` and `/apis/<group>/<version>/...` resource
 * paths (`[namespaces/<ns>/]<resource>[/<name>[/<subresource>]]`) dispatched by HTTP method to the
 * verbs. Errors become `Status` answers with their code.
 *
 * @module
 */
import * as discovery from "./discovery.ts";
import * as openapi from "./openapi.ts";
import { applyPatch } from "./patch_handler.ts";
import type { ObjectApi, UserInfo } from "./objects.ts";
import { listObjects, type WatchOptions, watchStream } from "./read_handlers.ts";
import type { ResourceType } from "./resource_types.ts";
import { parseFieldSelector, parseLabelSelector } from "./selectors.ts";
import { asTable, tableEncoder, wantsTable } from "./table.ts";
import { ApiError, isObject, type KubeObject, meta, notFound, str } from "./types.ts";

/** What a request handler needs. */
export interface RouteContext {
  objects: ObjectApi;
  watch: WatchOptions;
  /** Answers POST .../serviceaccounts/<name>/token (TokenRequest). */
  tokenRequest(namespace: string, name: string, body: KubeObject): Promise<KubeObject>;
  /** Answers POST /apis/authentication.k8s.io/v1/tokenreviews. */
  tokenReview(body: KubeObject): Promise<KubeObject>;
}

/** A JSON answer. */
export function json(body: unknown, status = 200, contentType = "application/json"): Response {
  return new Response(JSON.stringify(body), { status, headers: { "content-type": contentType } });
}

/** A resource path, parsed. */
interface Target {
  type: ResourceType;
  namespace: string;
  name: string;
  subresource: string;
}

function parseTarget(ctx: RouteContext, group: string, version: string, rest: string[]): Target {
  let namespace = "";
  let segs = rest;
  if (
    segs[0] === "namespaces" && segs.length >= 3 &&
    !(segs.length === 3 && ["status", "finalize"].includes(segs[2]))
  ) {
    namespace = segs[1];
    segs = segs.slice(2);
  }
  const [resource, name = "", subresource = ""] = segs;
  const type = ctx.objects.registry.find(group, version, resource);
  if (!type || segs.length > 3) {
    throw new ApiError("NotFound", "the server could not find the requested resource");
  }
  if (subresource && !type.subresources.includes(subresource)) {
    throw new ApiError("NotFound", "the server could not find the requested resource");
  }
  return { type, namespace, name, subresource };
}

async function readBody(req: Request): Promise<unknown> {
  const text = await req.text();
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new ApiError("BadRequest", `the request body is not JSON: ${(e as Error).message}`);
  }
}

async function readObject(req: Request): Promise<KubeObject> {
  const body = await readBody(req);
  if (!isObject(body)) throw new ApiError("BadRequest", "the request body is not a JSON object");
  return body;
}

function deletedStatus(t: ResourceType, o: KubeObject): KubeObject {
  return {
    kind: "Status",
    apiVersion: "v1",
    metadata: {},
    status: "Success",
    details: { name: str(meta(o), "name"), group: t.group, kind: t.resource, uid: str(meta(o), "uid") },
  };
}

async function resourceRequest(
  ctx: RouteContext,
  req: Request,
  url: URL,
  user: UserInfo,
  target: Target,
): Promise<Response> {
  const { type: t, namespace, name, subresource } = target;
  const params = url.searchParams;
  const accept = req.headers.get("accept");
  if (t.createOnly) {
    if (req.method !== "POST" || name) {
      throw new ApiError("MethodNotAllowed", `the server does not allow this method on ${t.resource}`);
    }
    return json(await ctx.tokenReview(await readObject(req)), 201);
  }
  switch (req.method) {
    case "GET": {
      if (name) {
        const o = ctx.objects.get(t, namespace, name);
        return wantsTable(accept) ? json(asTable(t, [o], o)) : json(o);
      }
      if (params.get("watch") === "1" || params.get("watch") === "true") {
        const encode = wantsTable(accept) ? tableEncoder(t) : undefined;
        const body = watchStream(ctx.objects.store, t, namespace, params, ctx.watch, encode);
        return new Response(body, {
          headers: { "content-type": "application/json", "transfer-encoding": "chunked" },
        });
      }
      const list = listObjects(ctx.objects.store, t, namespace, params);
      return wantsTable(accept) ? json(asTable(t, list.items as KubeObject[], list)) : json(list);
    }
    case "POST":
      if (subresource === "token" && name) {
        return json(await ctx.tokenRequest(namespace, name, await readObject(req)), 201);
      }
      if (name) throw new ApiError("MethodNotAllowed", "POST is not allowed on a named object");
      return json(await ctx.objects.create(t, namespace, await readObject(req), user), 201);
    case "PUT":
      if (!name) throw new ApiError("MethodNotAllowed", "PUT needs an object name");
      return json(await ctx.objects.update(t, namespace, name, await readObject(req), user, subresource));
    case "PATCH": {
      if (!name) throw new ApiError("MethodNotAllowed", "PATCH needs an object name");
      const current = ctx.objects.get(t, namespace, name);
      const patched = applyPatch(t, current, req.headers.get("content-type") ?? "", await readBody(req));
      return json(await ctx.objects.update(t, namespace, name, patched, user, subresource));
    }
    case "DELETE": {
      if (name) {
        const o = await ctx.objects.delete(t, namespace, name, user);
        return json(meta(o).deletionTimestamp ? o : deletedStatus(t, o));
      }
      const labels = parseLabelSelector(params.get("labelSelector"));
      const fields = parseFieldSelector(params.get("fieldSelector"));
      const doomed = ctx.objects.store.list(t, t.namespaced && namespace ? namespace : undefined)
        .filter((o) => labels(o) && fields(o));
      for (const o of doomed) {
        await ctx.objects.delete(t, str(meta(o), "namespace"), str(meta(o), "name"), user);
      }
      return json({ kind: "Status", apiVersion: "v1", metadata: {}, status: "Success" });
    }
    default:
      throw new ApiError("MethodNotAllowed", `method ${req.method} is not allowed`);
  }
}

/** Answers one authenticated request. */
export async function route(ctx: RouteContext, req: Request, user: UserInfo): Promise<Response> {
  const url = new URL(req.url);
  const segs = url.pathname.split("/").filter((s) => s !== "");
  const registry = ctx.objects.registry;
  const accept = req.headers.get("accept");
  if (url.pathname === "/version" || url.pathname === "/version/") return json(discovery.versionInfo());
  if (segs[0] === "openapi" && segs[1] === "v3") {
    if (segs.length === 2) return json(await openapi.rootDoc(registry));
    const doc = segs[2] === "api" && segs.length === 4
      ? openapi.groupVersionDoc(registry, "", segs[3])
      : segs[2] === "apis" && segs.length === 5
      ? openapi.groupVersionDoc(registry, segs[3], segs[4])
      : undefined;
    if (doc) return json(doc);
  }
  if (segs[0] === "api" && segs.length <= 2) {
    if (segs.length === 1) {
      return discovery.wantsAggregated(accept)
        ? json(discovery.aggregated(registry, true), 200, discovery.AGGREGATED_TYPE)
        : json(discovery.coreVersions());
    }
    const list = discovery.resourceList(registry, "", segs[1]);
    if (list) return json(list);
  }
  if (segs[0] === "apis" && segs.length <= 3) {
    if (segs.length === 1) {
      return discovery.wantsAggregated(accept)
        ? json(discovery.aggregated(registry, false), 200, discovery.AGGREGATED_TYPE)
        : json(discovery.groupList(registry));
    }
    const doc = segs.length === 2
      ? discovery.group(registry, segs[1])
      : discovery.resourceList(registry, segs[1], segs[2]);
    if (doc) return json(doc);
  }
  if (segs[0] === "api" && segs.length > 2) {
    return await resourceRequest(ctx, req, url, user, parseTarget(ctx, "", segs[1], segs.slice(2)));
  }
  if (segs[0] === "apis" && segs.length > 3) {
    return await resourceRequest(ctx, req, url, user, parseTarget(ctx, segs[1], segs[2], segs.slice(3)));
  }
  throw notFoundPath();
}

function notFoundPath(): ApiError {
  return new ApiError("NotFound", "the server could not find the requested resource");
}

/** Re-exported for the server: a missing object. */
export { notFound };
