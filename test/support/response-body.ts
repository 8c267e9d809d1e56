// The type of a harness answer's body, read from the generated client schema (client/src/schema.d.ts):
// a test that reads a field its operation does not document fails to compile.
import type { components, paths } from '@mi/client';
import type { Doc } from './openapi';

type Problem = components['schemas']['Problem'];

/** '/meetings/abc?limit=2' → ['meetings', 'abc']: the query is not part of the route. */
type Segments<P extends string> = P extends `${infer Path}?${string}` ? Split<Path> : Split<P>;
type Split<P extends string> = P extends `/${infer Head}/${infer Rest}`
  ? [Head, ...Split<`/${Rest}`>]
  : P extends `/${infer Last}`
    ? [Last]
    : never;

/**
 * A concrete path's segments fit a template's: `{name}` takes any one segment, literals match. A
 * path that does not start with a literal `/` (`${base}/${id}`) fits none.
 */
type Fits<S extends string[], T extends string[]> = [S] extends [never]
  ? false
  : S extends [infer A extends string, ...infer SR extends string[]]
    ? T extends [infer B extends string, ...infer TR extends string[]]
      ? B extends `{${string}}`
        ? Fits<SR, TR>
        : A extends B
          ? Fits<SR, TR>
          : false
      : false
    : T extends []
      ? true
      : false;

/** The documented route a path is a request to: its own key if literal, else the template it fits. */
export type RouteOf<P extends string> = P extends keyof paths
  ? P
  : P extends `${infer Path}?${string}`
    ? Path extends keyof paths
      ? Path
      : Templated<P>
    : Templated<P>;
type Templated<P extends string> = {
  [K in keyof paths & string]: Fits<Segments<P>, Segments<K>> extends true ? K : never;
}[keyof paths & string];

type OkStatus = 200 | 201 | 202 | 203 | 204 | 206;
/** The JSON bodies of an operation's 2xx answers (never when none has one: 204, audio, archives). */
type OkJson<Op> = Op extends { responses: infer R }
  ? {
      [S in keyof R & OkStatus]: R[S] extends { content: { 'application/json': infer B } } ? B : never;
    }[keyof R & OkStatus]
  : never;

/**
 * The body of `method path`'s answer: the operation's documented 2xx JSON, with the problem
 * members (title, status, detail, errors) readable too, for tests of error statuses.
 */
export type BodyOf<M extends string, P extends string> = string extends M | P
  ? Loose
  : [Uppercase<M>, P] extends ['GET', '/openapi.json']
    ? Doc
    : RouteOf<P> extends infer R extends keyof paths
      ? [R] extends [never]
        ? Loose
        : Lowercase<M> extends keyof paths[R]
          ? WithProblem<OkJson<paths[R][Lowercase<M>]>>
          : Loose
      : Loose;

type WithProblem<B> = [B] extends [never]
  ? Partial<Problem>
  : B extends unknown
    ? B & Partial<Omit<Problem, keyof B>>
    : never;

/** A path the document does not name (or one only known at run time): read it as a problem or cast. */
export type Loose = Partial<Problem> & Record<string, unknown>;
