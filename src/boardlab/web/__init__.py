"""`boardlab serve`: a read-only web view of a store (boards, campaigns, comparisons, histories, running
campaigns), each page a document of `analysis.document` rendered by the report's HTML renderer, with a `.json`
twin. Starlette and uvicorn are imported only when the server starts (the `web` extra)."""
