"""PyScript entry point: boot the lab (numpy, GPU adapter, panels), then autorun a suite if asked."""
import asyncio

from app import lab

asyncio.ensure_future(lab.main())
