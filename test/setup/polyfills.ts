import { installPromiseWithResolvers } from '../../src/util/polyfills.js';

installPromiseWithResolvers();
