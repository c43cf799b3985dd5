/**
 * The one naming module: every case conversion of the project (generated identifiers, event
 * types derived from class names, model route parameters, endpoint URIs, suggestions in
 * messages) goes through change-case, so they split words the same way. Hand-written converters
 * disagreed: `HTTPRequest` became `Httprequest` in one and `HTTP_REQUEST` in another.
 *
 * | Input | `pascalCase` | `camelCase` | `constantCase` | `kebabCase` |
 * |---|---|---|---|---|
 * | `HTTPRequest` | `HttpRequest` | `httpRequest` | `HTTP_REQUEST` | `http-request` |
 * | `line_item` | `LineItem` | `lineItem` | `LINE_ITEM` | `line-item` |
 * | `SUBMIT_ORDER` | `SubmitOrder` | `submitOrder` | `SUBMIT_ORDER` | `submit-order` |
 */
import * as changeCase from 'change-case';

// Digits join their neighbours (`version_1_2` -> `Version12`), as identifiers always did here;
// change-case would otherwise keep an `_` between two numbers.
const IDENTIFIER: changeCase.PascalCaseOptions = { mergeAmbiguousCharacters: true };

/** `order_admin`, `order.admin`, `ORDER_ADMIN` -> `OrderAdmin`; a leading digit gets `_`. */
export function pascalCase(text: string): string {
  const result = changeCase.pascalCase(text, IDENTIFIER);
  // An identifier cannot start with a digit.
  return /^[0-9]/.test(result) ? `_${result}` : result;
}

/** `order_admin`, `SUBMIT_ORDER`, `HTTPRequest` -> `orderAdmin`, `submitOrder`, `httpRequest`. */
export function camelCase(text: string): string {
  const result = changeCase.camelCase(text, IDENTIFIER);
  return /^[0-9]/.test(result) ? `_${result}` : result;
}

/** `ConsentGranted`, `HTTPRequest` -> `CONSENT_GRANTED`, `HTTP_REQUEST` (SCREAMING_SNAKE_CASE). */
export function constantCase(text: string): string {
  return changeCase.constantCase(text);
}

/**
 * Words of one case only, joined by `_` (or `-`): change-case splits them at the separators and
 * nowhere else, so their kebab case is theirs lowercased with `-`. Event types are written so,
 * and `defineMachine` turns each into a URI: change-case's first call (its Unicode word
 * patterns) cost every start about 30 M instructions.
 */
const ONE_CASE_WORDS = /^(?:[A-Z]+(?:_[A-Z]+)*|[a-z]+(?:[_-][a-z]+)*)$/;

/** `SUBMIT_ORDER` -> `submit-order`. */
export function kebabCase(text: string): string {
  if (ONE_CASE_WORDS.test(text)) return text.toLowerCase().replaceAll('_', '-');
  return changeCase.kebabCase(text);
}
