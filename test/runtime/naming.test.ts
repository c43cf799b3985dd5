/**
 * One naming module on change-case: the conversions that disagreed before (`HTTPRequest` was
 * `Httprequest` in generated identifiers and route parameters, `HTTP_REQUEST` as an event type)
 * now split words the same way everywhere.
 */
import { describe, expect, it } from 'vitest';
import { deriveEventType } from '../../src/runtime/definition/event-type.js';
import { endpointUriFor, modelParamName } from '../../src/runtime/definition/uri.js';
import { camelCase, constantCase, kebabCase, pascalCase } from '../../src/runtime/naming.js';
import * as generatorNaming from '../../src/generator/naming.js';

describe('naming', () => {
  it.each([
    ['HTTPRequest', 'HttpRequest', 'httpRequest', 'HTTP_REQUEST', 'http-request'],
    ['XMLHttpRequest', 'XmlHttpRequest', 'xmlHttpRequest', 'XML_HTTP_REQUEST', 'xml-http-request'],
    ['order_admin', 'OrderAdmin', 'orderAdmin', 'ORDER_ADMIN', 'order-admin'],
    ['order.admin', 'OrderAdmin', 'orderAdmin', 'ORDER_ADMIN', 'order-admin'],
    ['SUBMIT_ORDER_V2', 'SubmitOrderV2', 'submitOrderV2', 'SUBMIT_ORDER_V2', 'submit-order-v2'],
    ['line_item', 'LineItem', 'lineItem', 'LINE_ITEM', 'line-item'],
    ['version_1_2', 'Version12', 'version12', 'VERSION_1_2', 'version-1-2'],
  ])('%s -> %s, %s, %s, %s', (input, pascal, camel, constant, kebab) => {
    expect(pascalCase(input)).toBe(pascal);
    expect(camelCase(input)).toBe(camel);
    expect(constantCase(input)).toBe(constant);
    expect(kebabCase(input)).toBe(kebab);
  });

  it('should prefix identifiers that would start with a digit', () => {
    expect(pascalCase('3d_print')).toBe('_3dPrint');
    expect(camelCase('3d_print')).toBe('_3dPrint');
  });

  it('should agree across the generator, event types, route parameters and URIs', () => {
    expect(generatorNaming.pascalCase('HTTPRequest')).toBe('HttpRequest');
    expect(deriveEventType('HTTPRequestEvent')).toBe('HTTP_REQUEST');
    expect(deriveEventType('ConsentGrantedEvent')).toBe('CONSENT_GRANTED');
    expect(modelParamName('HTTPRequest')).toBe('httpRequest');
    expect(modelParamName('line_item')).toBe('lineItem');
    expect(modelParamName('Order')).toBe('order');
    expect(endpointUriFor(deriveEventType('HTTPRequestEvent'))).toBe('/http-request');
    expect(endpointUriFor('SUBMIT_ORDER_EVENT')).toBe('/submit-order');
  });
});
