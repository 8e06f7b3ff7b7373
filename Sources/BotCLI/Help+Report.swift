/// `pubbot help report`: what follows its usage line.
extension Help {
    static let reportDetails = """


        Merges the JSON reports of load shards: bot counts and totals add up, histograms merge
        bucket by bucket, and the percentiles are recomputed from the merged buckets (never
        averaged). Requirements are those of the shards unless --require is given.

        Options:
          --report OUT              write the merged report
          --require LIST            requirements to check (as for load)
          --json                    print the merged report as JSON

        Exit codes as for load.
        """
}
