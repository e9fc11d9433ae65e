"""What a Spark user does with HDFS, in PySpark's local mode, against the cluster at
argv[1]: DataFrame writes and reads of whole directories (parquet, CSV, JSON), RDD text
files in and out, and the streaming file source with a checkpoint. Prints one line per
check ("ok" or "FAIL <why>"). Run by test_spark.py."""

import sys

from pyspark.sql import SparkSession


def main(url):
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("ferrite-interop")
        .config("spark.ui.enabled", "false")
        .config("spark.hadoop.fs.defaultFS", url)
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    sc = spark.sparkContext
    sc.setLogLevel("ERROR")

    def equal(a, b):
        assert a == b, (a, b)

    def stream():
        q = (
            spark.readStream.schema("n LONG")
            .parquet(url + "/spark/p")
            .writeStream.format("parquet")
            .option("checkpointLocation", url + "/spark/ckpt")
            .option("path", url + "/spark/out")
            .trigger(availableNow=True)
            .start()
        )
        q.awaitTermination(180)
        equal(spark.read.parquet(url + "/spark/out").count(), 1000)

    df = spark.range(0, 1000).withColumnRenamed("id", "n")
    checks = [
        ("write parquet", lambda: df.write.mode("overwrite").parquet(url + "/spark/p")),
        ("read parquet", lambda: equal(spark.read.parquet(url + "/spark/p").count(), 1000)),
        ("write csv", lambda: df.write.mode("overwrite").csv(url + "/spark/c")),
        ("read csv", lambda: equal(spark.read.csv(url + "/spark/c").count(), 1000)),
        ("write json", lambda: df.write.mode("overwrite").json(url + "/spark/j")),
        ("read json", lambda: equal(spark.read.json(url + "/spark/j").count(), 1000)),
        ("textFile of a directory", lambda: equal(sc.textFile(url + "/spark/c").count(), 1000)),
        ("saveAsTextFile", lambda: sc.parallelize(range(100), 4).saveAsTextFile(url + "/spark/t")),
        ("wholeTextFiles", lambda: equal(len(sc.wholeTextFiles(url + "/spark/t").collect()), 4)),
        ("streaming file source", stream),
    ]
    for name, f in checks:
        try:
            f()
            print(f"{name}: ok", flush=True)
        except Exception as e:  # one line per failed check, the rest go on
            print(f"{name}: FAIL {str(e).splitlines()[0][:300]}", flush=True)
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1])
