/**
 * An Express service (the Cloud Run shape): `idempotentHttp` behind express.json(), for the
 * supplier's pushes and, in transaction mode, the transactional sink's.
 */
import express from "express";
import { ordersHttp } from "./guarded.js";

const app = express();
app.use(express.json({ limit: "1mb" }));
app.post("/{*path}", ordersHttp());
app.listen(Number(process.env.PORT), "127.0.0.1");
